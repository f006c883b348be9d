"""The backend interface and the description of a model to load."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, Required, Sequence, TypedDict

import numpy as np

Messages = list[dict[str, str]]
Progress = Callable[[int, int], None]  # (items done in this call, tokens processed in this call)


class BackendError(RuntimeError):
    """A model cannot be evaluated as asked (e.g. a choice label that is not one token)."""


@dataclass(frozen=True)
class ModelSpec:
    """Where a model's files are and what it is. `path` is a local folder (a Hub snapshot or a
    registered local model); `gguf_file` names a GGUF checkpoint inside it."""

    name: str
    path: str
    model_type: str  # "generative" | "reward"
    revision: str = ""
    gguf_file: str | None = None
    extra: dict = field(default_factory=dict)


@dataclass
class EngineCall:
    """One primitive request inside a combined engine call (see Backend.run_calls)."""

    kind: str  # "logprobs" | "generate"
    prompts: list[list[int]]
    choice_ids: list[int] = field(default_factory=list)
    max_new_tokens: int = 0


class BackendDescription(TypedDict, total=False):
    """What a result's provenance records of the engine that ran it (Backend.describe): which
    engine, model and revision, then what each engine adds."""

    backend: Required[str]
    model: Required[str]
    revision: Required[str | None]
    backend_version: str  # transformers / vLLM
    device: str  # transformers: cpu / cuda
    dtype: str
    prefix_caching: bool  # vLLM
    endpoint: str  # an OpenAI-compatible endpoint: its registered name (EndpointConfig.public)
    served_model: str  # the model id asked for
    served_model_ids: list[str]  # the ids the server answered with
    system_fingerprints: list[str]
    prompts_refused_too_long: int
    refusal: str
    endpoint_usage: dict[str, Any]  # tokens, cost_usd, prices_per_million


class Backend(ABC):
    name: str = "backend"
    spec: ModelSpec
    # Items a run hands the backend per call (evaluator/model_eval.py): checkpoints are written per call.
    batch_items: int = 64

    # -- prompts: both backends hold a Hugging Face tokenizer as `self.tokenizer` ----------------
    tokenizer: Any  # a transformers tokenizer; an endpoint backend holds none

    def render(self, messages: Messages, add_generation_prompt: bool = True) -> Any:
        """Apply the model's chat template and tokenize, once per prompt (refused if over the window).
        What a prompt is belongs to the backend: token ids here, the chat messages for an endpoint.

        A chat whose last message is the assistant's, asked with the generation prompt, is a
        prefill (evaluator/protocols.py generate_parse_prefill): the model continues that message.
        It is rendered as the template of the messages before it with the generation prompt, then
        that message's text, tokenized as one string (as upstream PrefEval's hand-written Mistral
        prompt ends in "[/INST]\\n<choice>"): the template never closes the started answer."""
        if not getattr(self.tokenizer, "chat_template", None):
            raise BackendError(
                f"{self.spec.name} has no chat template; generative evaluation needs one"
            )
        if add_generation_prompt and messages and messages[-1].get("role") == "assistant":
            text = self.tokenizer.apply_chat_template(
                messages[:-1], add_generation_prompt=True, tokenize=False
            )
            # apply_chat_template(tokenize=True) tokenizes its text the same way (no special tokens added)
            prefilled = self.tokenizer.encode(
                text + messages[-1]["content"], add_special_tokens=False
            )
            return self.checked(list(prefilled))
        ids = self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=add_generation_prompt, tokenize=True, return_dict=False
        )
        return self.checked(list(ids))

    def token_id(self, text: str) -> int:
        """The single token that `text` is when it starts the assistant's turn; BackendError if it is not one token."""
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        if len(ids) != 1:
            raise BackendError(
                f"choice label {text!r} is {len(ids)} tokens for {self.spec.name}, not one: "
                "its log-probability cannot be read from one next-token distribution"
            )
        return ids[0]

    def decode(self, token_ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(token_ids), skip_special_tokens=True)

    # -- primitives ---------------------------------------------------------------------------
    @abstractmethod
    def choice_logprobs(
        self, prompts: list[list[int]], choice_ids: list[int], progress: Progress | None = None
    ) -> np.ndarray:
        """Log-probabilities (over the full vocabulary) of each choice token as the next token: shape (n, k)."""

    @abstractmethod
    def generate(
        self, prompts: list[list[int]], max_new_tokens: int, progress: Progress | None = None
    ) -> Sequence[str | None]:
        """Greedy continuation of each prompt, at most max_new_tokens tokens (None: this prompt
        could not be run, e.g. over an endpoint's window; the item is n/a)."""

    @abstractmethod
    def reward_scores(
        self, prompts: list[list[int]], progress: Progress | None = None
    ) -> np.ndarray:
        """A classifier reward model's raw score of each full conversation (user turn + response)."""

    def run_calls(self, calls: list[EngineCall], progress: Progress | None = None) -> list:
        """Several primitive requests at once (e.g. the next chunk's first-reply generation riding
        along with this chunk's scoring). Here one after another; vLLM submits them in one call."""
        out: list[Any] = []
        for call in calls:
            if call.kind == "logprobs":
                out.append(self.choice_logprobs(call.prompts, call.choice_ids, progress))
            else:
                out.append(self.generate(call.prompts, call.max_new_tokens, progress))
        return out

    def memory_bytes(self) -> int:
        """What the loaded engine holds (the engine pool evicts by it); 0 when unknown."""
        return 0

    def context_window(self) -> int | None:
        return None

    def checked(self, ids: list[int]) -> list[int]:
        """A rendered prompt, refused if it does not fit the context window: never truncated."""
        window = self.context_window()
        if window and len(ids) > window:
            raise BackendError(
                f"a prompt of {len(ids)} tokens exceeds {self.spec.name}'s context window of "
                f"{window} tokens; prompts are never truncated"
            )
        return ids

    def describe(self) -> BackendDescription:
        return {"backend": self.name, "model": self.spec.name, "revision": self.spec.revision}
