"""The offer made when an interactive session resumes with a prompt that was never answered.

A process killed while it waited for an answer leaves the prompt as the last entry of the
session (docs/sessions.md, "An unanswered prompt"). Resuming it in a terminal (``heron
--continue``, ``--resume``, ``--session``) shows the prompt and asks what to do:

- **Enter** sends it again, from the unanswered entry's parent, so the request carries it
  once (:func:`heron.coding.unanswered.resend_unanswered`'s rule);
- **e** puts it in the input line to be edited; the leaf moves to its parent at once, so
  what is sent replaces it (the unanswered copy stays in the file as an abandoned branch;
  attached images are not kept - attach them again);
- **n**, Esc or Ctrl+C leave it: the next prompt is sent after it, with a note telling the
  model it was never answered (:func:`heron.coding.unanswered.note_unanswered`).

A session whose goal loop stopped mid-way (a killed process, a pause) is offered the same
way: **Enter** picks the loop up where it stopped (:meth:`heron.coding.goal_loop.GoalLoop.resume`),
anything else leaves it (a prompt typed then takes it up, with the user's words).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from heron.session.unanswered import Unanswered, unanswered_prompt

if TYPE_CHECKING:
    from heron.cli.tui.controller import Controller

LABEL = "Enter sends it again · e edits · n leaves it › "  # noqa: RUF001 - the input marker
LOOP_LABEL = "Enter picks it up · n leaves it › "  # noqa: RUF001 - the input marker
PREVIEW_LINES = 6


def offer_resend(controller: Controller) -> bool:
    """Start the offer as a job when the session's last prompt was never answered; False
    when there is nothing to offer."""
    found = unanswered_prompt(controller.session.store)
    if found is None and controller.session.goal_loop.pending():
        controller.start_job("resume", _offer_loop(controller))
        return True
    if found is None:
        return False
    controller.start_job("resume", _offer(controller, found))
    return True


async def _offer_loop(controller: Controller) -> None:
    goal = controller.session.goal_loop.state().goal
    say = f"the goal loop stopped before the goal was met:\n{preview(goal.text if goal else '')}"
    answer = await controller.ask_line(LOOP_LABEL, say)
    if answer is not None and answer.strip() == "":
        controller.note("picking the goal loop up")
        controller.start_run("", resend=True)  # the run becomes the job
    else:
        controller.note("left as it is: a prompt takes the loop up, with your words")


def preview(text: str) -> str:
    lines = text.strip().splitlines() or ["(images only)"]
    shown = "\n".join(f"  │ {line}" for line in lines[:PREVIEW_LINES])
    more = len(lines) - PREVIEW_LINES
    return shown + (f"\n  │ … {more} more line(s)" if more > 0 else "")


async def _offer(controller: Controller, found: Unanswered) -> None:
    text, images = found.parts()
    say = f"the last prompt was never answered (heron stopped before the answer came):\n{preview(text)}"
    answer = await controller.ask_line(LABEL, say)
    choice = "n" if answer is None else answer.strip().lower()
    if choice == "":
        await controller.session.navigate(found.parent_id)
        controller.note("sending it again")
        controller.start_run(text, images)  # the run becomes the job
    elif choice in ("e", "edit"):
        await controller.session.navigate(found.parent_id)
        note = "edit it and press Enter: it replaces the unanswered prompt"
        controller.note(note + (" (attach its images again)" if images else ""))
        await _put_in_input(controller, text)
    else:
        controller.note("left as it is: the next prompt tells the model it was never answered")


async def _put_in_input(controller: Controller, text: str) -> None:
    """Into the input line once it is back (it restarts after the answer was read)."""
    place = controller.place_in_input
    if place is not None:
        for _ in range(100):
            if place(text):
                return
            await asyncio.sleep(0.02)
    controller.set_prefill(text)
