"""What every door takes as a text, texts and pairs, checked before any model loads so the tokenizer refuses
nothing from deep inside. A text is a `str` UTF-8 can hold; a bare string is one text; a list or tuple holds
texts; anything else is refused, since iterating it would silently give something other than texts."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

from bertscore_tm.errors import ArgumentTypeError, ArgumentValueError


def check_text(value: object, name: str) -> str:
    """`value` if it is a text; an error naming `name` (a position such as ``preds[3]``) otherwise.

    >>> check_text("a\\ud800b", "context[0]")
    Traceback (most recent call last):
    ...
    bertscore_tm.errors.ArgumentValueError: context[0] cannot be encoded as UTF-8: ... at character 1: ...
    """
    if not isinstance(value, str):
        hint = ": decode bytes to str first" if isinstance(value, (bytes, bytearray)) else ""
        raise ArgumentTypeError(
            f"{name} must be a string, got {type(value).__name__}{hint}: {value!r:.60}",
            argument=argument_of(name),
            expected="str",
            value=value,
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ArgumentValueError(
            f"{name} cannot be encoded as UTF-8: {err.reason} ({value[err.start]!a}, a lone surrogate) at "
            f"character {err.start}: {value!a:.60}. Decode the text with errors='replace' or fix its source.",
            argument=argument_of(name),
            allowed="text that UTF-8 can hold",
            value=value,
        ) from None
    return value


def sequence_of(value: object, name: str, expected: str) -> Sequence[object]:
    """`value` if it is a sequence (not a string, bytes or a mapping); else an error saying what to pass."""
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray)):
        return value
    kind = type(value).__name__
    if isinstance(value, Mapping):
        hint = ": a mapping is not a sequence of texts (pass list(d.values()) or list(d) explicitly)"
    elif isinstance(value, (bytes, bytearray)):
        hint = ": decode bytes to str first (e.g. value.decode('utf-8'))"
    else:
        hint = " (pass a list, e.g. list(...) or array.tolist())"
    raise ArgumentTypeError(
        f"{name} must be {expected}, got {kind}{hint}", argument=argument_of(name), expected=expected, value=value
    )


def check_texts(value: object, name: str, *, what: str = "text", empty: bool = True) -> list[str]:
    """`value` as a list of texts: one string is one text, a sequence holds texts; `empty` False refuses none.

    >>> check_texts("One text.", "refs"), check_texts(("a", "b"), "refs")
    (['One text.'], ['a', 'b'])
    >>> check_texts(None, "refs")
    Traceback (most recent call last):
    ...
    bertscore_tm.errors.ArgumentTypeError: refs must be a string or a sequence of strings, got NoneType ...
    """
    items = [value] if isinstance(value, str) else sequence_of(value, name, "a string or a sequence of strings")
    if not empty and len(items) == 0:
        raise _empty(name, f"pass at least one {what}", f"at least one {what}", value)
    return [check_text(item, f"{name}[{i}]") for i, item in enumerate(items)]


def check_pairs(
    preds: object, target: object, names: tuple[str, str] = ("preds", "target"), *, empty: bool = True
) -> tuple[list[str], list[list[str]]]:
    """Candidates as texts and one non-empty list of references per candidate. `names`: the door's names of the
    two arguments (``score``'s ``cands`` and ``refs``); `empty` False refuses no pairs (docs/semantics.md).

    >>> check_pairs(["A cat."], [["A cat sat.", "A kitten."]])
    (['A cat.'], [['A cat sat.', 'A kitten.']])
    >>> check_pairs("A cat.", ["A cat sat.", "A kitten."])
    Traceback (most recent call last):
    ...
    bertscore_tm.errors.ArgumentValueError: preds and target must have the same length: got 1 predictions and 2 targets
    """
    first, second = names
    cands = check_texts(preds, first, what="pair", empty=empty)
    expected = "a string, a sequence of strings or a sequence of sequences of strings"
    refs = [target] if isinstance(target, str) else sequence_of(target, second, expected)
    if len(cands) != len(refs):
        raise ArgumentValueError(
            f"{first} and {second} must have the same length: got {len(cands)} predictions and {len(refs)} targets",
            argument=second,
            allowed=f"{len(cands)} targets, one per prediction",
            value=len(refs),
            others=(first,),
        )
    groups: list[list[str]] = []
    for i, ref in enumerate(refs):
        if isinstance(ref, str):
            groups.append([check_text(ref, f"{second}[{i}]")])
            continue
        group = sequence_of(ref, f"{second}[{i}]", "a string or a sequence of strings")
        if len(group) == 0:
            raise ArgumentValueError(
                f"{second}[{i}] is an empty list: every candidate needs at least one reference",
                argument=second,
                allowed="a non-empty list of references",
                value=group,
            )
        groups.append([check_text(r, f"{second}[{i}][{j}]") for j, r in enumerate(group)])
    return cands, groups


def check_contexts(value: object, count: int, name: str = "context") -> list[str] | None:
    """`value` as one text per pair (a string alone for one pair), or None.

    >>> check_contexts(["a", "b"], 1)
    Traceback (most recent call last):
    ...
    bertscore_tm.errors.ArgumentValueError: context must hold one text per pair: got 2 for 1 pair(s)
    """
    if value is None:
        return None
    contexts = check_texts(value, name)
    if len(contexts) != count:
        raise ArgumentValueError(
            f"{name} must hold one text per pair: got {len(contexts)} for {count} pair(s)",
            argument=argument_of(name),
            allowed=f"{count} texts",
            value=len(contexts),
        )
    return contexts


def check_groups(value: object, name: str = "groups", what: str = "hypothesis") -> list[list[str]]:
    """`value` as at least one group, each a text or a non-empty sequence of texts.

    >>> check_groups([["a", "b"], "c"])
    [['a', 'b'], ['c']]
    >>> check_groups([["a"], []])
    Traceback (most recent call last):
    ...
    bertscore_tm.errors.ArgumentValueError: groups[1] is empty: pass at least one hypothesis
    """
    items = sequence_of(value, name, "a sequence of lists of texts (one list per group)")
    if len(items) == 0:
        raise _empty(name, "give at least one group", "a group", [])
    return [check_texts(group, f"{name}[{g}]", what=what, empty=False) for g, group in enumerate(items)]


def check_corpus(value: object, name: str) -> list[str]:
    """References to count document frequencies over, flattened (several per candidate allowed); at least one."""
    flat = [
        text
        for j, item in enumerate(sequence_of(value, name, "a sequence of texts (or of lists of texts)"))
        for text in check_texts(item, f"{name}[{j}]")
    ]
    if not flat:
        raise _empty(name, "give the references to count over", "a reference", value)
    return flat


def check_stream(value: object, name: str) -> Iterator[object]:
    """An iterator over any iterable but a string, bytes or a mapping (whose items are characters or keys)."""
    if isinstance(value, (str, bytes, bytearray, Mapping)) or not isinstance(value, Iterable):
        raise ArgumentTypeError(
            f"{name} must be an iterable of items (a list, a generator...), got {type(value).__name__}: {value!r:.60}",
            argument=argument_of(name),
            expected="an iterable",
            value=value,
        )
    return iter(value)


def _empty(name: str, advice: str, allowed: str, value: object) -> ArgumentValueError:
    return ArgumentValueError(f"{name} is empty: {advice}", argument=argument_of(name), allowed=allowed, value=value)


def argument_of(position: str) -> str:
    """The argument a position names: ``preds`` of ``preds[3]``."""
    return position.split("[", 1)[0]
