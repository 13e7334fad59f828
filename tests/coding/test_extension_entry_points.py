"""The entry-point lookup of extensions reads ``importlib.metadata`` only when some
distribution may declare the group (coding/extensions/loader.py): the cheap check must
never say "no" where ``importlib.metadata`` would find an entry point."""

from __future__ import annotations

import sys
import zipfile
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from heron.coding.extensions.loader import ENTRY_POINT_GROUP, _entry_points, _may_declare


def dist(site: Path, name: str, entry_points_txt: str | None) -> None:
    info = site / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    if entry_points_txt is not None:
        (info / "entry_points.txt").write_text(entry_points_txt)


def test_every_group_the_installed_distributions_declare_is_seen() -> None:
    groups = entry_points().groups
    assert "console_scripts" in groups  # the environment has some to compare with
    assert [g for g in sorted(groups) if not _may_declare(g)] == []


def test_no_distribution_declaring_the_group_finds_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dist(tmp_path, "plain", "[console_scripts]\nplain = plain:main\n")
    dist(tmp_path, "bare", None)
    monkeypatch.setattr(sys, "path", [str(tmp_path), str(tmp_path / "missing")])
    assert not _may_declare(ENTRY_POINT_GROUP)
    assert _entry_points() == []


def test_a_declared_entry_point_is_found_as_importlib_metadata_finds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dist(tmp_path, "plain", "[console_scripts]\nplain = plain:main\n")
    dist(tmp_path, "heron_shout", f"[{ENTRY_POINT_GROUP}]\nshout = heron_shout\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    assert _may_declare(ENTRY_POINT_GROUP)
    assert [(c.name, c.source, c.path) for c in _entry_points()] == [
        ("shout", "entry-point", "entry point shout = heron_shout")
    ]


def test_an_egg_directory_and_a_zip_on_the_path_are_asked_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    egg = tmp_path / "shout-0.1.egg"
    (egg / "EGG-INFO").mkdir(parents=True)
    (egg / "EGG-INFO" / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nshout = shout\n")
    monkeypatch.setattr(sys, "path", [str(egg)])
    assert _may_declare(ENTRY_POINT_GROUP)
    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("x.py", "")
    monkeypatch.setattr(sys, "path", [str(archive)])
    assert _may_declare(ENTRY_POINT_GROUP)  # not read here: importlib.metadata decides
