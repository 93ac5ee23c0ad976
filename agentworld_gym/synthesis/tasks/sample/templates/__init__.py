"""Stage 1, sample (program route): the library of program templates, instantiated against an
environment's state model.

Records come from a listing (``list``) or from records the request names, fetched one by one
(``given``): many generated APIs can fetch a record but not list its collection, and some can
only write.

==================  =====================================================  ==================
template            program                                                control flow
==================  =====================================================  ==================
``bulk_update``     for every listed record (of a parent scope, optionally  loop, filter, join,
                    of parents matching a condition) matching a condition:  conditional write
                    set a field; report how many
``bulk_delete``     the same, deleting                                     loop, filter, join,
                                                                           conditional write
``sweep``           for every listed record: delete it if it matches a     loop, filter, branch,
                    condition, else set a field; report how many went      conditional write
``reconcile``       make a listing hold exactly the names the request      loop, filter, branch,
                    lists: delete the others, create the missing ones,     conditional write
                    set a setting every one should carry (a long errand:
                    two collections, one configuration); report how many
                    went
``branch_update``   for every listed record: if a number exceeds a         loop, branch, write
                    threshold set a field one way, else the other; report
                    how many went each way
``create_each``     for every parent (listed, or given and fetched)        loop, filter, join,
                    matching a condition: create a child linked to it;     conditional write
                    report how many
``update_create_   for every listed parent matching a condition: set a    loop, filter, join,
each``              field of it and create a child linked to it; report   conditional write
                    how many
``extreme``         the listed record with the highest/lowest number:      aggregate, write
                    update it, report its name
``aggregate``       total/average/highest/lowest/count over listed         loop, filter, join,
                    records matching conditions (maybe through parents)    aggregate
``group_max``       which parent has the most children                     loop, join, aggregate
``children_agg``    for given parents: list each one's children, filter,   loop, join, filter,
                    total/count them                                       aggregate
``batch_read``      fetch each given record: count, total or pick among    loop, filter,
                    them, or name those matching a condition               aggregate
``batch_update``    fetch each given record: update or delete those        loop, branch,
                    matching a condition, or set one value if it matches   conditional write
                    and another if not, or update the one with the
                    highest/lowest number
``batch_write``     update or delete each given record (APIs that only      loop, write
                    write)
``lookup_branch``   fetch one given record (or two, and compare them): if  branch, conditional
                    a field has a value (or a number exceeds a threshold)  write
                    update a record one way, else another way (or delete)
``create_batch``    create several records from values the request gives,  loop, branch,
                    a field computed by a rule over another; report how    write
                    many went each way
``create_chain``    create a parent, then children linked to the key it    join, loop, write
                    was given (read from the create call's result)
==================  =====================================================  ==================

One module per kind:

- :mod:`.listing` — templates over listings: ``bulk_update``, ``bulk_delete``, ``sweep``,
  ``branch_update``, ``create_each``, ``update_create_each``;
- :mod:`.reconcile` — ``reconcile``, which states an end state rather than the steps;
- :mod:`.aggregate` — templates that aggregate: ``extreme``, ``aggregate``, ``group_max``,
  ``children_agg``;
- :mod:`.given` — templates over records the request names: ``batch_read``,
  ``batch_update``, ``batch_write``;
- :mod:`.lookup_create` — templates that branch on one lookup or build records:
  ``lookup_branch``, ``create_batch``, ``create_chain``;
- :mod:`.shapes` — what they are built from: knobs, listings, conditions, joins, given records.

Each template writes its request as it instantiates (in the words of
:mod:`agentworld_gym.synthesis.tasks.request.program`) and names its verification script
(:mod:`agentworld_gym.synthesis.tasks.verifier.scripts`). The registry that draws them is
:data:`agentworld_gym.synthesis.tasks.goal.program.TEMPLATES`.
"""
