"""A comparison in a low window keeps a usable height for its answers. At 1024×640 with the folder-trust banner
open, the columns' answers had about 95 px each (the banner's four lines, three rows of header, the hint under the
message box took the rest); a window lower than ``COMPACT_HEIGHT`` now shows the banner on one line ("More" shows it
whole), the message box without its hint, and each header in two rows. A tall window shows them as before.

Real runs on the loopback model server, in a folder whose .robotlab/ settings wait for the folder's trust."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.compare_window import compare_config
from fakes.llm_server import FakeLLMServer, Reply

from tests.fakes.app_window import running_app, wait_until

pytestmark = pytest.mark.timeout(300)  # bounds a hang: a comparison of three scripted candidates

MODELS = ["qwen2.5-coder-32b-instruct-q4", "llama-3.1-70b-instruct-q5", "mistral-small-24b-instruct-2501"]


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    words = " ".join(f"Step {i} checks the change against the file and the tests." for i in range(1, 30))
    with FakeLLMServer(reply_fn=lambda body: Reply.say(f"{body['model']}: {words}", chunk_size=40),
                       models=MODELS) as srv:
        yield srv


@pytest.fixture
async def app(server: FakeLLMServer, tmp_path: Path, db_path: Path) -> AsyncIterator[Any]:
    from workspace import paths

    folder = tmp_path / "project"
    config_file = paths.project_config_file(folder)
    config_file.parent.mkdir(parents=True)
    config_file.write_text("mcpServers:\n  helper: {command: /nonexistent/helper-server}\n", encoding="utf-8")
    config = compare_config(server, MODELS[0], folder)
    async with running_app(db_path=db_path, config=config, folder=folder, theme_name="light",
                           size=(1024, 640)) as root:
        yield root


async def _settled(root: Any, size: tuple[int, int]) -> None:
    import asyncio

    window = root.window
    window.resize(*size)
    await wait_until(lambda: (window.width(), window.height()) == size, what=f"the window at {size}")
    for _ in range(10):
        await asyncio.sleep(0.02)


async def test_a_comparison_keeps_a_usable_height_at_1024x640_with_the_trust_banner(
        app: Any, server: FakeLLMServer) -> None:
    from ui.compare.session import CandidateSpec

    window = app.window
    banner = window.banner
    assert banner.isVisible() and "helper" in banner.text  # the folder's settings wait for its trust
    comparisons = window.comparisons
    base = server.base_url + "/v1"
    assert comparisons.start([CandidateSpec("assistant", model=f"openai/{m}", api_base=base) for m in MODELS[1:]])
    window.composer.set_text("Explain the change")
    window.composer.submit()
    await wait_until(lambda: not comparisons.running and comparisons.stats is not None
                     and all(c.status == "finished" for c in comparisons.stats.columns),
                     timeout=120, what="the three candidates' answers")
    await _settled(app, (1024, 640))
    view = comparisons.view
    assert view is not None and banner.isVisible()
    heights = [body.viewport().height() for body in view.bodies]
    # At least 30 % of the window's height for each answer (it had 15 %).
    assert min(heights) >= 0.3 * 640, (heights, banner.height(), [h.height() for h in view.headers],
                                       window.composer.height())
    # What was made compact still says everything: the banner's whole text under "More" and in its tooltip, each
    # header's state with its figures.
    assert banner.line.isVisible() and banner.line.toolTip() == banner.label.text()
    assert banner.more.isVisible()
    banner.more.click()
    assert banner.label.isVisible() and not banner.line.isVisible() and banner.more.text() == "Less"
    banner.more.click()
    assert banner.line.isVisible()
    for header in view.headers:
        assert header.figures.text().startswith("finished")
    # A tall window: as before (the banner's lines whole, the hint under the message box, headers in three rows).
    await _settled(app, (1900, 1000))
    assert banner.label.isVisible() and not banner.line.isVisible() and not banner.more.isVisible()
    assert window.composer.hint.isVisible()
    assert all(h.state.isVisible() and h.keep.text() == "Keep this one" for h in view.headers)
    assert not view.headers[0].figures.text().startswith("finished")
