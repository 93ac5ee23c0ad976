from __future__ import annotations

import pytest

from agentworld_gym.actions import parse_action
from agentworld_gym.errors import ActionParseError


def test_plain_json_call():
    p = parse_action('{"name": "get", "arguments": {"id": "x"}}')
    assert [(c.name, c.arguments) for c in p.calls] == [("get", {"id": "x"})]
    assert p.final_answer is None


def test_hermes_calls_inside_free_text():
    text = (
        'Let me look.\n<tool_call>{"name": "a", "arguments": {}}</tool_call>\n'
        '<tool_call>\n{"name": "b", "arguments": {"k": 1}}\n</tool_call>'
    )
    p = parse_action(text)
    assert [c.name for c in p.calls] == ["a", "b"] and p.content == "Let me look."


def test_unclosed_hermes_tag_still_parses():
    assert parse_action('<tool_call>{"name": "a", "arguments": {}}').calls[0].name == "a"


def test_openai_tool_calls_dict_with_string_arguments():
    msg = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "a", "arguments": '{"x": 1}'}},
            {"id": "c2", "type": "function", "function": {"name": "b", "arguments": "{bad"}},
        ],
    }
    p = parse_action(msg)
    assert p.calls[0].arguments == {"x": 1} and p.calls[0].id == "c1"
    assert p.calls[1].error is not None and "not valid JSON" in str(p.calls[1].error)


def test_list_of_calls_and_fenced_json():
    p = parse_action('```json\n[{"name": "a"}, {"name": "b", "arguments": {}}]\n```')
    assert [c.name for c in p.calls] == ["a", "b"] and p.calls[0].arguments == {}


@pytest.mark.parametrize("text", ["The answer is 42.", '{"answer": 42}', "[1, 2, 3]", ""])
def test_text_without_marker_is_the_final_answer(text):
    assert parse_action(text).final_answer == text


def test_malformed_call_is_an_error_not_an_answer():
    p = parse_action('{"name": "get", "arguments": {')
    assert p.final_answer is None and p.calls[0].error is not None
    p = parse_action("<tool_call>{not json}</tool_call>")
    assert p.final_answer is None and "Malformed JSON" in str(p.calls[0].error)


def test_submit_ends_after_earlier_calls():
    p = parse_action('[{"name": "a"}, {"name": "submit", "arguments": {"answer": "7"}}]')
    assert [c.name for c in p.calls] == ["a"] and p.final_answer == "7"


def test_oversized_and_non_utf8_actions_are_refused():
    with pytest.raises(ActionParseError, match="exceeds"):
        parse_action("x" * 11, max_chars=10)
    with pytest.raises(ActionParseError, match="UTF-8"):
        parse_action(b"\xff\xfe")
    with pytest.raises(ActionParseError, match="got int"):
        parse_action(5)
