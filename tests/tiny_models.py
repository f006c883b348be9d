"""Tiny random Llama models (generative and reward) with a real trained tokenizer, for fast tests.

About 1M parameters, built in well under a second; ChatML chat template like SmolLM2's.
"""

from __future__ import annotations

from pathlib import Path

CHATML = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
SPECIALS = ["<|pad|>", "<|im_start|>", "<|im_end|>"]
# The answer labels the suites' protocols read as one token each (choice/rating log-probs), added as
# whole-word tokens so that, as in real tokenizers, each is a single token while longer strings such
# as "AB" or " option" stay several tokens.
LABEL_TOKENS = [
    "True",
    "False",
    "YES",
    "NO",
    "yes",
    "no",
    "A",
    "B",
    "C",
    "D",
    "1",
    "2",
    "3",
    "4",
    "5",
]


def _corpus() -> list[str]:
    from evaluator.registry import get_task

    items = get_task("prefeval", "mcq").load_split().items[:300]
    texts = []
    for item in items:
        texts.append(item.public["question"])
        texts.extend(item.public["options"].values())
        texts.extend(m["content"] for m in item.public["context"])
    return texts


def build_tokenizer(vocab_size: int = 400):
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(_corpus(), trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<|pad|>", eos_token="<|im_end|>", bos_token="<|im_start|>"
    )
    fast.chat_template = CHATML
    fast.add_tokens(
        [AddedToken(label, single_word=True, normalized=False) for label in LABEL_TOKENS]
    )
    return fast


def build_tiny_model(
    folder: Path, kind: str = "generative", seed: int = 0, window: int = 16384
) -> Path:
    """A ~1M-parameter random Llama; `window`: its context length (max_position_embeddings)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, LlamaForSequenceClassification

    folder = Path(folder)
    tokenizer = build_tokenizer()
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=window,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id,
        tie_word_embeddings=False,
    )
    if kind == "reward":
        config.num_labels = 1
        model = LlamaForSequenceClassification(config)
    else:
        model = LlamaForCausalLM(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
