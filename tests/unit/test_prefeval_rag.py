"""PrefEval RAG by hand: one explicit item at 10 distractor turns, its prompt written out here from
upstream's code (handle_rag_task_mcq, convert_top_k_sentences_to_msg, get_question_prompt_mcq_rag)."""

from __future__ import annotations

from evaluator.registry import get_task
from evaluator.suites.prefeval import mcq

PREFERENCE = (
    "I strictly avoid restaurants that serve foods containing gluten due to a severe gluten "
    "intolerance."
)
QUESTION = (
    "I'll be visiting Rome soon. What are some must-try local restaurants you'd recommend for me?"
)
REPLY = "Understood, no gluten."


class FixedRetriever:
    """Scores by hand: passage 1 (the reply) best, then 0 (the preference), 5, 2 and 21 (the last
    distractor message); everything else lower. Records what it was asked."""

    ranking = (1, 0, 5, 2, 21)

    def __init__(self):
        self.asked = []

    def retrieve(self, query, passages, k):
        self.asked.append((query, list(passages), k))
        return [passages[i] for i in self.ranking[:k]]


def test_rag_prompt_of_one_item_at_ten_turns_by_hand():
    pub = next(
        item.public
        for item in get_task("prefeval", "mcq_turns").load_split().items
        if item.id == "explicit-travel_restaurant-000-t10"
    )
    assert pub["context"] == [{"role": "user", "content": PREFERENCE}]
    assert pub["question"] == QUESTION
    distractors = mcq.distractor_turns(10)
    retriever = FixedRetriever()
    messages = mcq.item_messages(pub, "rag", REPLY, retriever)

    # what is ranked: 2 + 2 x 10 passages, in upstream's wording and order
    ((query, passages, k),) = retriever.asked
    assert query == QUESTION and k == 5 and len(passages) == 22
    assert passages[0] == "User: " + PREFERENCE and passages[1] == "Assistant: " + REPLY
    assert passages[2] == "user: " + distractors[0]["content"]
    assert passages[5] == "assistant: " + distractors[3]["content"]
    assert passages[21] == "assistant: " + distractors[19]["content"]

    context = (
        "Before answering my question, please consider the following context from our previous "
        "conversations. These are the 5 most relevant exchanges that we had previously, which may "
        "contain information about my preferences or prior discussions related to my query:\n\n"
        "#Start of Context#\n"
        f"exchange 1. Assistant: {REPLY}\n"
        f"exchange 2. User: {PREFERENCE}\n"
        f"exchange 3. assistant: {distractors[3]['content']}\n"
        f"exchange 4. user: {distractors[0]['content']}\n"
        f"exchange 5. assistant: {distractors[19]['content']}\n"
        "#End of Context#\n\n"
        "Please use this context to inform your answer and adhere to any preferences I've expressed "
        "that are relevant to the current query. Note that not all contexts are useful for "
        "answering my question and there may be no context that is useful. Now, please address my "
        "question:\n\n"
    )
    options = (
        "A. Bonci Pizzarium, a renowned pizza al taglio (pizza by the slice) spot.\n"
        "B. Pizzeria da Michele, famous for their wood-fired Neapolitan pizzas.\n"
        "C. Gemma, a cozy gluten-free trattoria serving authentic Roman cuisine.\n"
        "D. Roscioli, a bakery and restaurant known for their fresh pasta."
    )
    mcq_format = (
        "\n    I'm trying to decide on this and here are 4 options for my query: \n"
        f"{options}\n"
        "Now, I'd like you to pick one of them as your top recommendation for me.\n"
        "    Important instructions for your response:\n"
        "    1. Choose only one option (A, B, C, or D) that best matches my preferences.\n"
        "    2. Your answer must be one of these options.\n"
        "    3. Don't say things like \"I can't choose\" or suggest alternatives not listed.\n"
        "    4. Answer example: <choice>B</choice>. Give me your answer in this exact format, "
        "without any additional explanation:\n"
        "       <choice>[A/B/C/D]</choice>\n"
        "    "
    )
    # the whole conversation stays; the retrieved block and the question end it
    assert messages == [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": PREFERENCE},
        {"role": "assistant", "content": REPLY},
        *distractors,
        {"role": "user", "content": context + QUESTION + mcq_format},
    ]


def test_rag_is_not_applicable_where_upstream_asserts():
    items = get_task("prefeval", "mcq").load_split()
    kept, skipped = mcq.fit_model(None, items, "rag", backend=None)
    assert {i.public["form"] for i in kept.items} == {"implicit_persona"}
    assert len(kept.items) == 1000 and len(skipped) == 2
    assert "fewer than the 5" in skipped["rag: explicit, 0 distractor turns"]
    # other settings keep every item
    assert mcq.fit_model(None, items, "zero_shot", backend=None) == (items, {})


def test_the_row_names_its_retriever(monkeypatch):
    from evaluator.backends.embedding import retriever_name

    monkeypatch.delenv("PERSONABOARD_EMBEDDING_MODEL", raising=False)
    # the offline default by name, not its installed path
    assert retriever_name().startswith("sentence-transformers/all-MiniLM-L6-v2 (offline default")
    monkeypatch.setenv("PERSONABOARD_EMBEDDING_MODEL", "princeton-nlp/sup-simcse-roberta-large")
    assert retriever_name() == "princeton-nlp/sup-simcse-roberta-large"  # the papers' retriever


def test_a_simcse_retriever_embeds_with_its_cls_pooler(tmp_path):
    """The papers' retriever (sup-simcse-roberta-large) pools as SimCSE's tool does: [CLS] through
    the pooler. A tiny random BERT saved under a SimCSE-like name stands in for it offline."""
    import sys
    from pathlib import Path

    import numpy as np
    import torch
    from transformers import BertConfig, BertModel

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tiny_models import build_tokenizer

    from evaluator.backends.embedding import Embedder

    folder = tmp_path / "tiny-sup-simcse-bert"
    tokenizer = build_tokenizer()
    torch.manual_seed(3)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        pad_token_id=tokenizer.pad_token_id,
    )
    BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    embedder = Embedder(str(folder))
    assert embedder.pooling == "cls_pooler"
    texts = ["I avoid gluten", "a longer sentence about cars and roads"]
    batch = embedder.tokenizer(texts, padding=True, return_tensors="pt")
    with torch.inference_mode():
        expected = torch.nn.functional.normalize(embedder.model(**batch).pooler_output, dim=-1)
    assert np.allclose(embedder.embed(texts), expected.numpy(), atol=1e-6)
