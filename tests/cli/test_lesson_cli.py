"""`fuselens lesson`: one offline page that explains every match, checked by parsing it (and in a browser)."""

from __future__ import annotations

import base64
import html
import re
from html.parser import HTMLParser

import pytest

from fuselens.cli import main as cli_main
from fuselens.core.formats.loaders import load_model
from fuselens.passes.pipeline import run_pipeline
from tests.browser import chromium, needs_chromium

URL = re.compile(r"(?:https?|ftp)://|//[a-z0-9.-]+\.[a-z]{2,}/", re.IGNORECASE)


class PageParts(HTMLParser):
    """What a page would load: every src / href, and the tags and ids it holds."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.tags: list[str] = []
        self.ids: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for key, value in attrs:
            if key in ("src", "href", "xlink:href", "data") and value:
                self.links.append(value)
            if key == "id" and value:
                self.ids.append(value)


@pytest.fixture(scope="module")
def demo_matches():
    pipeline = run_pipeline(load_model("demo").graph)
    return [m for r in pipeline.results for m in r.matches]


@pytest.fixture(scope="module")
def demo_lesson(tmp_path_factory):
    path = tmp_path_factory.mktemp("lesson") / "lesson.html"
    assert cli_main(["lesson", "demo", "-o", str(path)]) == 0
    return path


def test_lesson_explains_every_match_of_the_demo_offline(demo_lesson, demo_matches):
    text = demo_lesson.read_text(encoding="utf-8")
    page = PageParts()
    page.feed(text)
    assert not URL.search(text), URL.search(text)
    assert all(link.startswith("#") for link in page.links), page.links  # only links inside the page
    assert "img" not in page.tags and "script" not in page.tags and "link" not in page.tags
    sections = [i for i in page.ids if re.fullmatch(r"m\d+", i)]
    assert len(sections) == len(demo_matches) == 7
    assert page.tags.count("svg") == 2 * len(demo_matches)  # before and after, inline
    for match in demo_matches:
        assert match.anchor in text and f"Explained: {html.escape(match.explanation['title'])}" in text
    fold = next(m for m in demo_matches if m.pass_id == "ConvBatchnormFusionPass")
    assert f"<b>{fold.explanation['example']['w_folded']}</b>" in text  # the numbers, not only the formula


def test_markdown_variant_and_a_chosen_match(tmp_path, demo_matches):
    path = tmp_path / "lesson.md"
    wanted = next(m for m in demo_matches if m.pass_id == "ScopeLayerNormPass")
    assert cli_main(["lesson", "demo", "--match", wanted.id, "-o", str(path)]) == 0
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# FuseLens lesson: demo") and text.count("\n## ") == 1
    assert "y = γ · (x − μ) / √(σ² + ε) + β" in text
    images = re.findall(r"!\[(before|after)\]\(data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)\)", text)
    assert [alt for alt, _ in images] == ["before", "after"]
    assert all(base64.b64decode(data).startswith(b"<svg ") for _, data in images)
    assert not URL.search(re.sub(r"xmlns='http://www\.w3\.org/2000/svg'", "", text.replace(
        "".join(d for _, d in images), "")))


def test_an_unknown_match_is_one_line_and_writes_nothing(tmp_path, capsys):
    path = tmp_path / "lesson.html"
    assert cli_main(["lesson", "demo", "--match", "ConvBatchnormFusionPass:nope", "-o", str(path)]) == 2
    assert "no match ConvBatchnormFusionPass:nope" in capsys.readouterr().err and not path.exists()


@needs_chromium
def test_the_lesson_renders_in_a_headless_browser(demo_lesson, tmp_path):
    shot = tmp_path / "lesson.png"
    chromium(demo_lesson, "--window-size=1280,2000", f"--screenshot={shot}")
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 20_000  # a drawn page, not a blank one
