import json

import pytest

from neurips25 import display, plotting, results


def test_method_colors_are_stable():
    assert plotting.method_color("ours") == plotting.METHOD_COLORS["ours"]
    assert plotting.method_color("ToMe") == plotting.method_color("tome")
    assert plotting.method_color("ToMe") in plotting.PALETTE
    with pytest.raises(ValueError, match="name"):
        plotting.method_color("")


def test_use_style_sets_rcparams():
    import matplotlib as mpl

    plotting.use_style(10)
    assert mpl.rcParams["font.size"] == 10 and mpl.rcParams["axes.spines.top"] is False
    with pytest.raises(ValueError, match="font_size"):
        plotting.use_style(2)


def test_show_source_and_ranges():
    code = display.show_source(plotting.method_color)
    assert repr(code).startswith("def method_color")
    assert "```python" in code._repr_markdown_()
    assert repr(display.show_source(plotting.method_color, lines=(1, 1))).startswith("def method_color")
    with pytest.raises(ValueError, match="lines"):
        display.show_source(plotting.method_color, lines=(5, 2))
    with pytest.raises(TypeError, match="obj"):
        display.show_source(3)


def test_results_table_and_fmt():
    t = display.paper_vs_ours([("acc", 0.91234, 0.9, "smaller model"), ("n", None, 100, "")])
    md = t._repr_markdown_()
    assert "| quantity | paper | ours | note |" in md and "0.912" in md and "—" in md
    html = t._repr_html_()
    assert "<th>quantity</th>" in html and "<td>0.912</td>" in html and "<caption>Paper vs. ours</caption>" in html
    assert "smaller model" in repr(t)
    assert t.column("ours") == [0.9, 100]
    with pytest.raises(ValueError, match="cells"):
        t.add(1, 2)
    with pytest.raises(ValueError, match="unknown column"):
        t.column("x")
    with pytest.raises(ValueError, match="columns"):
        display.ResultsTable([])
    assert display.fmt(1.23456e-7) == "1.23e-07"
    assert display.fmt(12345.6) == "1.23e+04"
    assert display.fmt(3) == "3" and display.fmt(float("nan")) == "nan"


def test_results_roundtrip(tmp_path):
    path = results.save_results("demo", {"x": [1, 2]}, command="python -m demo", seed=0,
                                path=tmp_path / "demo.json")
    payload = results.load_results("demo", path=path)
    assert payload["data"] == {"x": [1, 2]} and payload["command"] == "python -m demo"
    assert json.loads(path.read_text())["seed"] == 0
    with pytest.raises(ValueError, match="slug"):
        results.save_results("Bad Slug", {}, "c", 0, path=tmp_path / "x.json")
    with pytest.raises(FileNotFoundError, match="regenerate"):
        results.load_results("missing", path=tmp_path / "missing.json")
    with pytest.raises(TypeError, match="data"):
        results.save_results("demo", [1], "c", 0, path=tmp_path / "y.json")


def test_results_scale_paths_and_cli_options(tmp_path, monkeypatch):
    import argparse

    monkeypatch.setenv("NEURIPS25_RESULTS", str(tmp_path))
    assert results.results_path("demo") == tmp_path / "demo.json"
    assert results.results_path("demo", "full") == tmp_path / "demo.full.json"
    monkeypatch.setenv("NEURIPS25_SCALE", "full")
    assert results.sweep_scale("demo") == "small"  # no full sweep yet: the book's is read
    monkeypatch.setenv("NEURIPS25_SCALE", "small")
    with pytest.raises(ValueError, match="scale must be one of"):
        results.results_path("demo", "huge")
    path = results.save_results("demo", {"x": 1}, "c", 0, scale="full")
    payload = results.load_results("demo", scale="full")
    assert path.name == "demo.full.json" and payload["scale"] == "full" and "smoke" not in payload
    assert results.sweep_scale("demo") == "small"
    monkeypatch.setenv("NEURIPS25_SCALE", "full")
    assert results.sweep_scale("demo") == "full"
    monkeypatch.setenv("NEURIPS25_SCALE", "small")
    monkeypatch.setenv("NEURIPS25_SMOKE", "1")
    assert results.load_results("demo", path=results.save_results("demo", {}, "c", 0))["smoke"] is True
    with pytest.raises(FileNotFoundError, match="--scale full"):
        results.load_results("other", scale="full")
    ap = argparse.ArgumentParser()
    results.add_scale_arguments(ap)
    args = ap.parse_args(["--scale", "full", "--out", str(tmp_path / "o.json")])
    assert args.scale == "full" and args.out == tmp_path / "o.json"
    assert ap.parse_args([]).scale == "small" and ap.parse_args([]).out is None
    with pytest.raises(SystemExit):
        ap.parse_args(["--scale", "medium"])
