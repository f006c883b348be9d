"""generate_parse_prefill end to end: a tiny Llama that answers "B</choice>" (without the opening
tag, as a model whose answer upstream prefills) runs PrefEval mcq through evaluator/model_eval.py;
the rendering that starts the answer, and a chat endpoint's refusal."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tiny_models import build_tiny_model  # noqa: E402

from evaluator.backends import BackendError, ModelSpec, load_backend  # noqa: E402
from evaluator.backends.openai_endpoint import EndpointBackend  # noqa: E402
from evaluator.endpoints import EndpointConfig  # noqa: E402
from evaluator.model_eval import Checkpoint, run_model  # noqa: E402
from evaluator.protocols import PREFILL, UNPARSED, with_prefill  # noqa: E402
from evaluator.registry import get_task  # noqa: E402

ANSWER = "B</choice>"
CHAT = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Pick one. <choice>[A/B/C/D]</choice>"},
]


def build_answering_model(folder: Path) -> Path:
    """A tiny Llama whose greedy answer is ANSWER, after the generation prompt ("\\n") and after a
    prefilled "<choice>" alike. "<choice>" and "</choice>" are made single tokens (as in real
    vocabularies they are few), so that the 5-token budget holds the answer; then the weights are
    set as tiny_models.build_scripted_judge sets them: each token's hidden state is its embedding
    (output projections zero), and the head maps "\\n" and "<choice>" to "B", "B" to "</choice>",
    "</choice>" to the end of turn."""
    import torch
    from tokenizers import AddedToken
    from transformers import AutoModelForCausalLM, AutoTokenizer

    build_tiny_model(folder, "generative", seed=11)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.add_tokens([AddedToken(t, normalized=False) for t in ("<choice>", "</choice>")])
    model = AutoModelForCausalLM.from_pretrained(folder)
    model.resize_token_embeddings(len(tokenizer))
    token = tokenizer.convert_tokens_to_ids
    newline = tokenizer("<|im_start|>assistant\n", add_special_tokens=False)["input_ids"][-1]
    chain = {
        newline: "B",
        token("<choice>"): "B",
        token("B"): "</choice>",
        token("</choice>"): "<|im_end|>",
    }
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        embeddings, head = model.model.embed_tokens.weight, model.lm_head.weight
        head.zero_()
        for k, (current, following) in enumerate(chain.items()):
            embeddings[current].zero_()
            embeddings[current, k] = 1.0
            head[token(following), k] = 100.0
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def answering(tmp_path_factory):
    folder = build_answering_model(tmp_path_factory.mktemp("answering") / "model")
    return load_backend(ModelSpec("tiny-answers-b", str(folder), "generative"), device="cpu")


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    folder = build_tiny_model(tmp_path_factory.mktemp("plain") / "model", seed=12)
    return load_backend(ModelSpec("tiny", str(folder), "generative"), device="cpu")


def test_render_starts_the_answer_inside_the_template(plain):
    """The chat template with its generation prompt, then the prefill, tokenized as one text: the
    unprefilled prompt is a prefix of it and nothing closes the started answer."""
    tokenizer = plain.tokenizer
    ids = plain.render(with_prefill(CHAT, "<choice>"))
    text = tokenizer.apply_chat_template(CHAT, add_generation_prompt=True, tokenize=False)
    assert ids == tokenizer.encode(text + "<choice>", add_special_tokens=False)
    assert ids[: len(plain.render(CHAT))] == plain.render(CHAT)
    assert tokenizer.decode(ids).endswith("<|im_start|>assistant\n<choice>")
    # a finished conversation (a reward model's) is still closed, not continued
    done = [*CHAT, {"role": "assistant", "content": "B"}]
    assert tokenizer.decode(plain.render(done, add_generation_prompt=False)).endswith(
        "B<|im_end|>\n"
    )


@pytest.mark.parametrize("setting", ["zero_shot", "self_critic"])
def test_a_prefilled_run_reads_B_where_the_unprefilled_run_reads_nothing(
    answering, setting, tmp_path
):
    task = get_task("prefeval", "mcq")
    runs = {}
    for protocol in (PREFILL, "generate_parse"):
        checkpoint = Checkpoint(tmp_path / f"{protocol}.jsonl")
        run = run_model(task, setting, answering, protocol, limit=6, checkpoint=checkpoint)
        runs[protocol] = (run, list(checkpoint.load().values()))
    run, records = runs[PREFILL]
    assert run.stats["protocol"] == PREFILL and run.stats["unparsed"] == 0
    assert set(run.answers.values()) == {"B"} and len(records) == 6
    for record in records:
        assert record["raw"] == ANSWER
        assert record["messages"][-1] == {"role": "assistant", "content": "<choice>"}
        assert "the answer was prefilled" in record["rule"]
    if setting == "self_critic":  # the critiqued first answer is "<choice>" + output, as upstream
        assert any(
            m == {"role": "assistant", "content": "<choice>" + ANSWER}
            for record in records
            for m in record["messages"]
        )
    run, records = runs["generate_parse"]
    assert run.stats["unparsed"] == 6 and set(run.answers.values()) == {None}
    for record in records:
        assert record["raw"] == ANSWER and record["rule"] == UNPARSED
        assert record["messages"][-1]["role"] == "user"


def test_a_chat_endpoint_refuses_the_prefill_before_any_call():
    """The endpoint renders its own template: it cannot start the answer, so the run is refused
    with a message, before any request (nothing listens on the port)."""
    backend = EndpointBackend(
        EndpointConfig(name="chat-only", base_url="http://127.0.0.1:9/v1", model="m", max_retries=0)
    )
    with pytest.raises(BackendError, match="chat endpoint.*use generate_parse"):
        run_model(get_task("prefeval", "mcq"), "zero_shot", backend, PREFILL, limit=3)
    assert backend.usage["requests"] == 0
    assert backend.render(CHAT) == CHAT  # unprefilled chats go out as before


def test_a_chat_endpoint_is_refused_the_prefill_at_intake():
    """The intake and the run ask the same rule (protocol_problem): a chat endpoint renders its own
    template, so it is refused the prefill before anything is queued, with what to use instead."""
    from evaluator.backends.openai_endpoint import EndpointBackend
    from evaluator.protocols import PREFILL, protocol_problem
    from evaluator.registry import get_task

    task = get_task("prefeval", "mcq")
    problem = protocol_problem(task, PREFILL, "generative", True, chat_only=True)
    assert problem and "chat endpoint" in problem and "use generate_parse" in problem
    assert protocol_problem(task, PREFILL, "generative", True) is None
    assert protocol_problem(task, "generate_parse", "generative", True, chat_only=True) is None
    assert EndpointBackend.chat_only is True
