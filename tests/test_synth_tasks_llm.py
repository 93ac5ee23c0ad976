"""The LLM route of task synthesis, with a scripted stand-in for the model."""

from __future__ import annotations

from test_synth_tasks import make_op_env

from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.replay import replay_gold, score_answer
from agentworld_gym.synthesis.tasks import synthesize_tasks
from agentworld_gym.synthesis.tasks.model import build_model
from agentworld_gym.synthesis.tasks.request.render import paraphrase
from agentworld_gym.synthesis.tasks.sample.graph import STRONG, ToolGraph

PROGRAM = """Here you go:

REQUEST: Close every open task and tell me how many you closed.
```python
def program(call):
    closed = 0
    for t in call("listTasks"):
        if t["status"] == "open":
            call("updateTask", taskId=t["id"], status="done")
            closed += 1
    return {"closed": closed}
```
"""


class ScriptedModel:
    """Answers the synthesizer's three kinds of prompt the way a good model would."""

    def __init__(self, leak: str = "") -> None:
        self.leak = leak
        self.prompts: list[str] = []

    def chat(self, messages, tools=None, **sampling):
        prompt = messages[-1]["content"]
        self.prompts.append(prompt)
        if prompt.startswith("Rewrite this request"):
            text = prompt.split("\n\n")[1]
            return {"role": "assistant", "content": f"Hi! {self.leak}{text}"}
        if prompt.startswith("Tools of one API"):
            return {"role": "assistant", "content": '[["getSettings", "listTasks"], ["x", "y"]]'}
        return {"role": "assistant", "content": PROGRAM}


def test_llm_writes_programs_and_paraphrases_and_all_still_verify():
    spec = make_op_env()
    model = ScriptedModel()
    spec.tasks = synthesize_tasks(spec, n=8, seed=1, llm=model)
    written = [t for t in spec.tasks if t.provenance.get("method") == "llm-program"]
    assert len(written) == 1  # the same program twice is a duplicate
    n_open = sum(1 for t in spec.records["tasks"] if t["status"] == "open")
    assert written[0].reference_answer == f"closed: {n_open}"
    assert all(t.provenance.get("route") == "llm" for t in spec.tasks)
    assert any(t.instruction.startswith("Hi! ") for t in spec.tasks)
    env = AgentWorldEnv(spec, split="all")
    for task in spec.tasks:
        assert replay_gold(env, task).ok, task.id
        assert score_answer(env, task, "") < 0.5


def test_paraphrase_that_leaks_or_drops_a_value_is_discarded():
    text = 'Update the task "t01": set status "done".'
    leaky = ScriptedModel(leak="use updateTask. ")
    assert paraphrase(leaky, text, ["t01", "done"], [], ["updateTask"]) == text
    assert paraphrase(ScriptedModel(), text, ["t01", "done"], [], ["updateTask"]).startswith("Hi")
    assert paraphrase(ScriptedModel(), text, ["t01", "gone"], [], []) == text  # drops a value


def test_llm_labels_extra_strong_edges():
    graph = ToolGraph(build_model(make_op_env()))
    assert graph.edge("getSettings", "listTasks").weight != STRONG
    assert graph.label_with_llm(ScriptedModel()) == 1
    assert graph.edge("getSettings", "listTasks").weight == STRONG
