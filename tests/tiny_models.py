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


def build_scripted_model(
    folder: Path, reply: str, seed: int = 0, tags: tuple[str, ...] = ()
) -> Path:
    """A tiny generative model whose greedy reply to ANY chat prompt is `reply`, then end of turn:
    the real path of a generation (render, generation, parsing: a judge, generate_parse,
    self-critic) on a known reply, ended after a few tokens where a random model fills its whole
    token budget. `tags`: strings the tokenizer gets as whole (non-special) tokens, so a reply
    such as "<choice>B</choice>", whose characters would otherwise repeat tokens, can be scripted.

    Built, not trained: every layer's output projections are zero, so the last hidden state is
    the current token's embedding; the reply's tokens get orthogonal embeddings and the output
    head maps each to the next one (the prompt's last token, the newline after "assistant", to
    the first). A bigram machine, so no token may occur twice in the reply (checked)."""
    import torch
    from tokenizers import AddedToken
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = build_tiny_model(folder, "generative", seed=seed)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder)
    if tags:
        tokenizer.add_tokens([AddedToken(tag, normalized=False) for tag in tags])
        model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    start = tokenizer("<|im_start|>assistant\n", add_special_tokens=False)["input_ids"][-1]
    chain = [start, *tokenizer(reply, add_special_tokens=False)["input_ids"]]
    chain.append(tokenizer.convert_tokens_to_ids("<|im_end|>"))
    if len(set(chain)) != len(chain):
        raise ValueError(f"reply {reply!r} repeats a token: {chain}")
    hidden = model.config.hidden_size
    if len(chain) > hidden:
        raise ValueError(f"reply {reply!r} is {len(chain)} tokens; at most {hidden}")
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        embeddings = model.model.embed_tokens.weight
        head = model.lm_head.weight
        head.zero_()
        for k, token in enumerate(chain):
            embeddings[token].zero_()
            embeddings[token, k] = 1.0
        for k, following in enumerate(chain[1:]):  # token k's hidden state -> token k + 1
            head[following, k] = 100.0
    model.save_pretrained(folder)
    if tags:
        tokenizer.save_pretrained(folder)
    return folder


build_scripted_judge = build_scripted_model  # a judge is a scripted model (its verdict's text)
