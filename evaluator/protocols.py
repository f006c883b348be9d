"""Evaluation protocols: how a model's decision is read, independent of the backend: a registry.

A suite's hooks turn items into requests (chat messages plus the labels to choose from); a
protocol turns requests into decisions with the backend's primitives. Backends differ only in
speed, never in what a protocol computes. Protocols are registered by name (@register_protocol,
here or in a suite's own protocols.py); manifests are checked against the registry at discovery,
and `default_protocol` is the one rule for which protocol a model gets when none is asked for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from evaluator.backends.base import Backend, BackendError, Messages, Progress

if TYPE_CHECKING:
    from evaluator.suite import Task

PROTOCOL_VERSION = "1"


@dataclass
class ChoiceRequest:
    """Pick one of `labels` after `messages`. `responses` (label -> text) is for reward models,
    which score each candidate response instead of reading a label."""

    id: str
    messages: Messages
    labels: tuple[str, ...]
    responses: dict[str, str] = field(default_factory=dict)
    # generate_parse: this request's own generation budget, where its step differs from the task's
    # (PrefEval's self-critic revision: 500 tokens after 300-token answers); None: the task's
    max_new_tokens: int | None = None


@dataclass
class Decision:
    id: str
    answer: str | None  # None: no parsable answer (counts as wrong)
    scores: dict[str, float] = field(
        default_factory=dict
    )  # label -> renormalised log-prob or reward
    raw: str | None = None  # generated text, for generate-and-parse
    prompt_tokens: int = 0
    # the backend could not run the prompt (an endpoint refused it as over its window): the item is
    # n/a for this model (run_model leaves it out of the scored split), not wrong
    not_applicable: bool = False
    # What a reader of the item needs to see why it scored so (the per-item details of a public
    # split: submissions/details.py): the chat as sent, and how the answer was read from the
    # output (`rule`: a parser's or protocol's name, UNPARSED when nothing could be read)
    messages: Messages | None = None
    rule: str | None = None


UNPARSED = "unparsed"  # a Decision's rule when no answer could be read from the model's output
LOGPROB_RULE = "logprobs: the label most likely as the next token"
REWARD_RULE = "reward: the response the reward model scores highest"


def parser_rule(parse: Callable[..., Any]) -> str:
    """How a parser is named in a decision's rule: its own `rule` attribute, else its module and
    name with the first line of its doc ("prefeval.mcq.parse_answer: The official parser ...")."""
    named = getattr(parse, "rule", None)
    if named:
        return str(named)
    module = str(getattr(parse, "__module__", "")).removeprefix("evaluator.suites.")
    name = f"{module}.{getattr(parse, '__name__', 'parse')}".strip(".")
    doc = (getattr(parse, "__doc__", None) or "").strip().splitlines()
    return f"{name}: {doc[0]}" if doc else name


def choose_by_logprobs(
    backend: Backend, requests: list[ChoiceRequest], progress: Progress | None = None
) -> list[Decision]:
    """One forward pass per prompt: the label whose token is most likely next wins.

    Log-probs are renormalised over the labels, so `scores` is the model's distribution over the
    choices. Every label must be exactly one token: otherwise this is an error, never a guess.
    """
    if not requests:
        return []
    labels = requests[0].labels
    if any(r.labels != labels for r in requests):
        raise BackendError("all requests of one call must share their labels")
    label_ids = [backend.token_id(label) for label in labels]
    prompts = [backend.render(r.messages) for r in requests]
    logprobs = backend.choice_logprobs(prompts, label_ids, progress)
    with np.errstate(
        invalid="ignore"
    ):  # a row of -inf (no readable label) becomes NaN: no answer, below
        normalised = logprobs - np.logaddexp.reduce(logprobs, axis=1, keepdims=True)
    decisions = []
    # a backend that can refuse a prompt (an endpoint, over its window) marks it with a row of NaN: n/a.
    # Elsewhere NaN is a broken model, and stays a wrong answer rather than vanishing from the split.
    marks_refusals = getattr(backend, "marks_refused_prompts", False)
    for request, prompt, row, raw in zip(requests, prompts, normalised, logprobs):
        if marks_refusals and np.isnan(raw).all():
            decisions.append(
                Decision(request.id, None, {}, prompt_tokens=len(prompt), not_applicable=True)
            )
            continue
        if not np.isfinite(row).any():
            # no label among what the model's output showed (an endpoint's top log-probs): no answer
            decisions.append(
                Decision(
                    request.id,
                    None,
                    {},
                    prompt_tokens=len(prompt),
                    messages=request.messages,
                    rule=UNPARSED,
                )
            )
            continue
        best = int(np.argmax(row))
        decisions.append(
            Decision(
                request.id,
                labels[best],
                dict(zip(labels, map(float, row))),
                prompt_tokens=len(prompt),
                messages=request.messages,
                rule=LOGPROB_RULE,
            )
        )
    return decisions


def rotate_options(public: dict, shift: int) -> dict:
    """The item with its lettered options rotated by `shift`: the option at letter i moves to letter
    i - shift, so the option the model sees as letter j is the original letter j + shift."""
    letters = list(public["options"])
    texts = [public["options"][letter] for letter in letters]
    k = len(letters)
    return {
        **public,
        "id": f"{public['id']}::r{shift}",
        "options": {letters[j]: texts[(j + shift) % k] for j in range(k)},
    }


CIRCULAR = "circular_logprobs"
CIRCULAR_RULE = "circular: the same option under every rotation"


def circular_publics(publics: list[dict]) -> list[dict]:
    """Circular evaluation (MMBench's CircularEval) asks each item under every rotation of its options."""
    return [rotate_options(pub, shift) for pub in publics for shift in range(len(pub["options"]))]


def combine_rotations(publics: list[dict], decisions: list[Decision]) -> list[Decision]:
    """One decision per item from its rotations' decisions: the original option the model picked under
    all rotations, or None (wrong) when they disagree. Position bias cannot earn a point: a model that
    always says "A" picks a different option under every rotation."""
    letters_of = {pub["id"]: list(pub["options"]) for pub in publics}
    picked: dict[str, list[str | None]] = {}
    for decision in decisions:
        item, _, variant = decision.id.partition("::r")
        letters = letters_of[item]
        original = (
            None
            if decision.answer is None
            else letters[(letters.index(decision.answer) + int(variant)) % len(letters)]
        )
        picked.setdefault(item, []).append(original)
    first = {d.id.partition("::r")[0]: d for d in reversed(decisions)}  # each item's rotation 0
    out = []
    for pub in publics:
        choices = picked[pub["id"]]
        agreed = (
            choices[0] if choices[0] is not None and all(c == choices[0] for c in choices) else None
        )
        rule = (
            UNPARSED
            if None in choices
            else CIRCULAR_RULE
            if agreed
            else "circular: the rotations picked different options (wrong)"
        )
        shown = first.get(pub["id"])
        out.append(
            Decision(
                pub["id"],
                agreed,
                raw=",".join(c or "-" for c in choices),
                prompt_tokens=shown.prompt_tokens if shown else 0,
                messages=shown.messages if shown else None,  # the prompt of the first rotation
                rule=rule,
            )
        )
    return out


def choose_by_generation(
    backend: Backend,
    requests: list[ChoiceRequest],
    max_new_tokens: int,
    parse: Callable[[str], str | None],
    progress: Progress | None = None,
) -> list[Decision]:
    """Greedy generation, then the suite's parser; an unparsable answer is None (wrong). Requests
    with a budget of their own are generated in one call per budget."""
    prompts = [backend.render(r.messages) for r in requests]
    budgets = [r.max_new_tokens or max_new_tokens for r in requests]
    texts: list[str | None] = [None] * len(requests)
    for budget in sorted(set(budgets)):
        chosen = [i for i, b in enumerate(budgets) if b == budget]
        out = backend.generate([prompts[i] for i in chosen], budget, progress)
        for i, text in zip(chosen, out):
            texts[i] = text
    rule = parser_rule(parse)
    decisions = []
    for r, text, p in zip(requests, texts, prompts):
        if text is None:  # n/a (over the window)
            decisions.append(Decision(r.id, None, prompt_tokens=len(p), not_applicable=True))
            continue
        answer = parse(text)
        decisions.append(
            Decision(
                r.id,
                answer,
                raw=text,
                prompt_tokens=len(p),
                messages=r.messages,
                rule=UNPARSED if answer is None else rule,
            )
        )
    return decisions


def choose_by_reward(
    backend: Backend, requests: list[ChoiceRequest], progress: Progress | None = None
) -> list[Decision]:
    """A reward model scores each candidate response after the user turn; the strict best wins (a tie is no answer)."""
    flat, owners = [], []
    for index, request in enumerate(requests):
        for label in request.labels:
            conversation = [
                *request.messages,
                {"role": "assistant", "content": request.responses[label]},
            ]
            flat.append(backend.render(conversation, add_generation_prompt=False))
            owners.append((index, label))
    scores = backend.reward_scores(flat, progress)
    per_request: list[dict[str, float]] = [{} for _ in requests]
    for (index, label), score in zip(owners, scores):
        per_request[index][label] = float(score)
    decisions = []
    for request, by_label in zip(requests, per_request):
        best = max(by_label.values())
        winners = [label for label, score in by_label.items() if score == best]
        decisions.append(
            Decision(
                request.id,
                winners[0] if len(winners) == 1 else None,
                by_label,
                messages=request.messages,
                rule=REWARD_RULE if len(winners) == 1 else "reward: a tie (no answer)",
            )
        )
    return decisions


def expected_rating(decision: Decision) -> float:
    """Mean of a 1-5 (or any numeric-label) rating under the model's distribution over the labels."""
    if not decision.scores:
        return float(
            "nan"
        )  # no label was readable (an endpoint's top log-probs held none): not scored
    weights = np.exp(np.array(list(decision.scores.values())))
    values = np.array([float(label) for label in decision.scores])
    return float((weights * values).sum() / weights.sum())


CHOICE_TAG = re.compile(r"<choice>\s*([A-Z])", re.IGNORECASE)


def parse_choice_tag(
    text: str, labels: tuple[str, ...] = ("A", "B", "C", "D"), prefilled: bool = False
) -> str | None:
    """PrefEval's answer format: `<choice>X</choice>`; with a prefilled `<choice>` the text starts at X."""
    match = CHOICE_TAG.search(("<choice>" if prefilled else "") + text)
    if match and match.group(1).upper() in labels:
        return match.group(1).upper()
    return None


# -- the registry ---------------------------------------------------------------------------------

ProtocolRun = Callable[[Backend, list[ChoiceRequest], "Task", "Progress | None"], list[Decision]]


@dataclass(frozen=True)
class ProtocolSpec:
    name: str
    model_type: str  # the kind of model it runs: generative | reward
    run: ProtocolRun  # (backend, requests, task, progress) -> decisions, one per request, in order
    description: str = ""
    reads_logprobs: bool = (
        False  # needs the model's log-probabilities (an endpoint may not return them)
    )


_PROTOCOLS: dict[str, ProtocolSpec] = {}


def register_protocol(
    name: str,
    *,
    model_type: str = "generative",
    description: str = "",
    reads_logprobs: bool = False,
) -> Callable[[ProtocolRun], ProtocolRun]:
    """Decorator: `run(backend, requests, task, progress) -> list[Decision]` is protocol `name`."""
    if model_type not in ("generative", "reward"):
        raise ValueError(
            f"protocol {name!r}: model_type must be generative or reward, not {model_type!r}"
        )

    def register(run: ProtocolRun) -> ProtocolRun:
        previous = _PROTOCOLS.get(name)
        if previous is not None and previous.run is not run:
            raise ValueError(
                f"protocol {name!r} is registered twice ({previous.run.__module__} and {run.__module__})"
            )
        _PROTOCOLS[name] = ProtocolSpec(name, model_type, run, description, reads_logprobs)
        return run

    return register


def get_protocol(name: str) -> ProtocolSpec:
    try:
        return _PROTOCOLS[name]
    except KeyError:
        raise BackendError(
            f"unknown protocol {name!r}; known protocols: {', '.join(_PROTOCOLS)}"
        ) from None


def known_protocols() -> tuple[str, ...]:
    return tuple(_PROTOCOLS)


def default_protocol(task: "Task", model_type: str, logprobs: bool = True) -> str | None:
    """The protocol a model runs with when the submitter names none (intake and runs share it): the
    task's default when it fits the model, else the first of the task's protocols that does. Fits:
    made for the model's type (a reward model: `reward`), and, for a model whose log-probabilities
    cannot be read (an endpoint that returns none), not reading them (generate and parse)."""
    fitting = [
        name
        for name in task.model_protocols
        if name in _PROTOCOLS
        and _PROTOCOLS[name].model_type == model_type
        and (logprobs or not _PROTOCOLS[name].reads_logprobs)
    ]
    preferred = task.model.get("default_protocol")
    if preferred in fitting:
        return preferred
    return fitting[0] if fitting else ("reward" if model_type == "reward" else preferred)


# A setting that asks the model to reason needs a protocol that lets it write before answering, with
# room to: a log-prob or reward protocol reads one next token (or a score), and a few answer tokens
# cut any reasoning off. Such a run would only be labelled `cot`; it is refused instead.
REASONING_SETTINGS = frozenset({"cot"})
REASONING_MIN_NEW_TOKENS = 64


def setting_problem(task: "Task", setting: str | None, protocol: str | None) -> str | None:
    """Why `setting` cannot be honoured by `protocol` on `task` (None: it can). A task lists in
    `model.direct_answer_settings` the settings whose prompt asks for the bare answer anyway (its
    authors ran them with the short answer budget)."""
    if setting not in REASONING_SETTINGS or protocol is None:
        return None
    if setting in task.model.get("direct_answer_settings", ()):
        return None
    spec = _PROTOCOLS.get(protocol)
    budget = int(task.model.get("max_new_tokens", 16))
    if spec is None or spec.reads_logprobs or spec.model_type != "generative":
        return (
            f"setting {setting!r} asks the model to reason before answering, which protocol {protocol!r} does not "
            f"let it do (it reads the answer without generating)"
        )
    if budget < REASONING_MIN_NEW_TOKENS:
        return (
            f"setting {setting!r} asks the model to reason before answering, but {task.key} lets a generating "
            f"protocol write only {budget} tokens (max_new_tokens): too few to reason, so it is not run as {setting!r}"
        )
    return None


def protocol_problem(
    task: "Task",
    protocol: str | None,
    model_type: str,
    logprobs: bool = True,
    chat_only: bool = False,
) -> str | None:
    """Why `protocol` cannot run a `model_type` model on `task` (None: it can). `chat_only`: a chat
    endpoint, which renders its own template and so cannot start the model's answer (a prefill)."""
    if protocol in _PROTOCOLS and _PROTOCOLS[protocol].reads_logprobs and not logprobs:
        return (
            f"the model is an endpoint that returns no log-probabilities: protocol {protocol!r} cannot be read "
            f"from it; use generate_parse"
        )
    if protocol == PREFILL and chat_only:
        return (
            f"the model is a chat endpoint, which renders its own chat template: protocol {protocol!r} starts "
            "the model's answer inside the template, which such an endpoint cannot do; use generate_parse"
        )
    if protocol not in task.model_protocols:
        return f"{task.key} runs models with {', '.join(task.model_protocols) or 'no protocol'}, not {protocol!r}"
    if get_protocol(protocol).model_type != model_type:
        return f"protocol {protocol!r} does not fit a {model_type} model"
    return None


def _by_logprobs(
    backend: Backend, requests: list[ChoiceRequest], task: "Task", progress: Progress | None = None
) -> list[Decision]:
    return choose_by_logprobs(backend, requests, progress)


for _name, _description in (
    ("choice_logprobs", "the option label whose token is most likely next"),
    (
        "pairwise_logprobs",
        "a judgment between two responses, read from the label log-probabilities",
    ),
    ("rating_logprobs", "a rating, as the expectation over the rating labels' probabilities"),
):
    register_protocol(_name, description=_description, reads_logprobs=True)(_by_logprobs)

LOGPROB_PROTOCOLS = tuple(
    name for name, spec in _PROTOCOLS.items() if spec.reads_logprobs
)  # the built-in ones


@register_protocol(
    "generate_parse",
    description="greedy generation (the task's max_new_tokens), then the task's parser",
)
def _generate_parse(
    backend: Backend, requests: list[ChoiceRequest], task: "Task", progress: Progress | None = None
) -> list[Decision]:
    parse = task.hooks.parse_answer
    assert parse is not None  # bind_hooks requires it of a task that runs generate_parse
    return choose_by_generation(
        backend, requests, int(task.model.get("max_new_tokens", 16)), parse, progress
    )


PREFILL = "generate_parse_prefill"
PREFILL_OPTION = "answer_prefill"  # the task option (manifest `options:`) holding the prefill text


def answer_prefill(task: "Task") -> str:
    """The text a prefilled run starts the model's answer with (PrefEval mcq: "<choice>")."""
    prefill = task.options.get(PREFILL_OPTION)
    if not prefill:
        raise BackendError(
            f"{task.key} declares no answer prefill (options.{PREFILL_OPTION}): {PREFILL} cannot run it"
        )
    return str(prefill)


def with_prefill(messages: Messages, prefill: str) -> Messages:
    """The chat as sent with the assistant's answer started: a last assistant message is continued
    (Backend.render), never closed. Idempotent, so a suite may add it when building requests."""
    if messages and messages[-1] == {"role": "assistant", "content": prefill}:
        return messages
    return [*messages, {"role": "assistant", "content": prefill}]


def prefilled_parser(
    parse: Callable[[str], str | None], prefill: str
) -> Callable[[str], str | None]:
    """The task's parser on prefill + output, as upstream reads a prefilled answer
    (extract_choice("<choice>" + end_generation)); its rule says so."""

    def read(text: str) -> str | None:
        return parse(prefill + text)

    read.rule = f"{parser_rule(parse)} (on {prefill!r} + output: the answer was prefilled)"  # type: ignore[attr-defined]
    return read


@register_protocol(
    PREFILL,
    description="greedy generation after the task's answer prefill (options.answer_prefill, PrefEval: "
    "'<choice>', as upstream's Claude and Mistral runs), then the task's parser on prefill + output",
)
def _generate_parse_prefill(
    backend: Backend, requests: list[ChoiceRequest], task: "Task", progress: Progress | None = None
) -> list[Decision]:
    parse = task.hooks.parse_answer
    assert parse is not None  # bind_hooks requires it of a task that runs generate_parse
    prefill = answer_prefill(task)
    sent = [
        ChoiceRequest(
            r.id, with_prefill(r.messages, prefill), r.labels, r.responses, r.max_new_tokens
        )
        for r in requests
    ]
    return choose_by_generation(
        backend,
        sent,
        int(task.model.get("max_new_tokens", 16)),
        prefilled_parser(parse, prefill),
        progress,
    )


@register_protocol(
    "reward", model_type="reward", description="a reward model scores each candidate response"
)
def _reward(
    backend: Backend, requests: list[ChoiceRequest], task: "Task", progress: Progress | None = None
) -> list[Decision]:
    return choose_by_reward(backend, requests, progress)


@register_protocol(
    CIRCULAR,
    reads_logprobs=True,
    description="choice_logprobs under every rotation of the options; right only if right under all "
    "(the run asks the rotations: evaluator/model_eval.py)",
)
def _circular(
    backend: Backend, requests: list[ChoiceRequest], task: "Task", progress: Progress | None = None
) -> list[Decision]:
    return choose_by_logprobs(backend, requests, progress)
