"""The loop guard on streamed text, fed the way a model produces it: a few characters at a time."""

from __future__ import annotations

from tiller.ai.providers.loop_guard import LoopGuard


def stream_through(text: str, step: int = 3) -> tuple[str, LoopGuard, list[str]]:
    """Feed `text` in `step`-sized pieces; return what was shown, the guard, and each release."""
    guard = LoopGuard()
    releases = []
    for start in range(0, len(text), step):
        releases.append(guard.feed(text[start : start + step]))
        if guard.looping:
            break
    releases.append(guard.flush())
    return "".join(releases), guard, releases


def test_ordinary_text_passes_through_unchanged_and_undelayed():
    text = (
        "A haiku:\n\nBlade turns the cold earth\nrows of dark furrows waiting\nseed and rain to come\n\n"
        "```python\nfor row in field:\n    till(row)\n    till(row, deeper=True)\n```\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n" + "-" * 40 + "\nha ha ha, that was fun.\n0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
    )
    shown, guard, releases = stream_through(text)
    assert shown == text
    assert not guard.looping
    assert "".join(releases[:-1]) == text  # nothing was held back until the end


def test_closing_braces_at_different_depths_are_different_lines():
    text = "if a:\n  if b:\n    x()\n    }\n  }\n}\n}\n"
    shown, guard, _ = stream_through(text)
    assert shown == text and not guard.looping


def test_a_third_identical_line_is_never_shown():
    text = "Rows of beans.\n" * 6
    shown, guard, _ = stream_through(text)
    assert guard.looping
    assert shown == "Rows of beans.\nRows of beans.\n"


def test_blank_lines_between_copies_do_not_hide_a_loop():
    shown, guard, _ = stream_through("Till the field.\n\nTill the field.\n\nTill the field.\n\nTill")
    assert guard.looping
    assert shown.count("Till the field.") == 2


def test_a_line_that_starts_like_the_repeated_one_is_held_then_released_when_it_differs():
    guard = LoopGuard()
    assert guard.feed("Rows of beans.\nRows of beans.\n") == "Rows of beans.\nRows of beans.\n"
    assert guard.feed("Rows of ") == ""  # might be the third copy: held
    assert guard.feed("peas.\n") == "Rows of peas.\n"  # it is not: all of it goes out
    assert not guard.looping


def test_a_repeated_line_at_the_very_end_is_released_by_flush():
    guard = LoopGuard()
    guard.feed("Rows.\nRows.\nRow")
    assert guard.flush() == "Row"


def test_a_phrase_loop_within_a_line_stops_the_reply():
    text = "A kami, " + "a kami, " * 60
    shown, guard, _ = stream_through(text)
    assert guard.looping
    assert 4 <= shown.lower().count("a kami") <= 6  # stopped soon after the fourth copy
    assert text.startswith(shown)


def test_after_a_loop_nothing_more_is_released():
    guard = LoopGuard()
    guard.feed("Rows.\nRows.\nRows.\n")
    assert guard.looping
    assert guard.feed("more text\n") == "" and guard.flush() == ""
