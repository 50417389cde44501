"""Every config in conf/ composes and validates; mistakes stop with one clear line."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

from evo.cli.hydra_app import CONF_DIR, compose
from evo.core.errors import ConfigError

GROUPS = ["shapes", "search", "islands", "mutator", "llm", "evaluator", "archive"]


def options(group):
    return sorted(p.stem for p in (Path(CONF_DIR) / group).glob("*.yaml") if not p.stem.startswith("_"))


@pytest.mark.parametrize("group", GROUPS)
def test_every_group_option_composes(group):
    for option in options(group):
        overrides = [f"{group}={option}"]
        if (group, option) == ("shapes", "inline"):
            overrides.append("shapes.list=[77x4096x4096]")
        if (group, option) == ("llm", "replay"):
            overrides.append("llm.replay_from=old.sqlite")
        c, _ = compose(overrides)
        assert c.archive.path


@pytest.mark.parametrize("experiment", [p.stem for p in (Path(CONF_DIR) / "experiment").glob("*.yaml")])
def test_every_experiment_composes(experiment):
    c, _ = compose([f"+experiment={experiment}"])
    assert c.search.max_evaluations >= 1


def test_shape_sets():
    from evo.core.shapes import build_shape_set
    c, _ = compose(["shapes=cuda_l2"])
    assert len(build_shape_set(listed=c.shapes.list, grid=c.shapes.grid)) == 1000
    c, _ = compose(["shapes=llm_layers"])
    shapes = build_shape_set(listed=c.shapes.list, grid=c.shapes.grid)
    assert {1, 77, 333} <= {s.M for s in shapes}
    c, _ = compose(["shapes=inline", "shapes.list=[1x4096x11008,77x77x77]"])
    assert [str(s) for s in build_shape_set(listed=c.shapes.list, grid=c.shapes.grid)] == ["1x4096x11008", "77x77x77"]


@pytest.mark.parametrize("overrides, words", [
    (["islands.n=-3"], "islands.n=-3: must be >= 1"),
    (["islands.n=abc"], "Value 'abc' of type 'str' could not be converted to Integer"),
    (["islands.nn=3"], "Key 'nn' not in 'IslandsConfig'"),
    (["shapes=nonexistent"], "Could not find 'shapes/nonexistent' (available: cuda_l2, grid125, inline, llm_layers, smoke)"),
    (["shapse=smoke"], "shapse"),
    (["mutator.policy=greedy"], "mutator.policy='greedy': must be one of reinforce, uniform"),
    (["shapes=inline"], "shapes: the shape set is empty"),
    (["shapes=inline", "shapes.list=[12x12]"], "12x12"),
    (["llm=replay"], "llm.replay_from"),
    (["family=cutlass"], "family='cutlass'"),
    (["evaluator.cluster_queue=-1"], "evaluator.cluster_queue=-1: must be >= 0"),
])
def test_mistakes_name_the_key(overrides, words):
    with pytest.raises(ConfigError) as info:
        compose(overrides)
    assert words in str(info.value)
    assert "\n" not in str(info.value)


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "evo", *args], capture_output=True, text=True, timeout=120)


def test_cli_shows_the_composed_config():
    out = run_cli("run", "--cfg", "job", "islands.n=5")
    assert out.returncode == 0, out.stderr
    assert "islands:" in out.stdout and "'n': 5" in out.stdout and "shapes:" in out.stdout


@pytest.mark.parametrize("command", ["run", "bench", "sweep", "selftest"])
def test_each_command_help_says_what_it_does_first(command):
    from evo.cli.hydra_app import HELP
    out = run_cli(command, "--help")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith(f"usage: evo {command}") and lines[2] == HELP[command].summary
    groups = out.stdout.index("config groups")
    dump = out.stdout.index("configuration with these overrides:")
    assert out.stdout.index("main options:") < groups < dump  # what it does and its options before the dump
    assert "  shapes      " in out.stdout and "smoke" in out.stdout and "llm_layers" in out.stdout
    assert not re.search(r"\bbase_(shapes|search|islands|mutator|llm|evaluator|archive)\b", out.stdout)
    assert "evo_schema" not in out.stdout  # internal schema options hidden


def test_help_shows_the_configuration_with_the_given_overrides():
    out = run_cli("run", "--help", "islands.n=7")
    assert out.returncode == 0 and "  'n': 7" in out.stdout


def test_version():
    from evo import __version__
    for args in (["--version"], ["-V"], ["export", "--version"]):
        out = run_cli(*args)
        assert out.returncode == 0 and out.stdout.strip() == f"evo {__version__}", (args, out)


def test_cli_rejects_a_bad_value_in_one_line():
    out = run_cli("run", "islands.n=-3")
    assert out.returncode == 2
    assert out.stderr.strip() == "evo: error: islands.n=-3: must be >= 1"


def test_a_misspelt_key_gets_the_closest_key_of_its_section():
    with pytest.raises(ConfigError, match=r"Key 'max_evalutions' not in 'SearchConfig' \(did you mean 'max_evaluations'\?\)"):
        compose(["search.max_evalutions=3"])
    with pytest.raises(ConfigError) as nothing_close:
        compose(["search.zzzqqq=3"])
    assert "did you mean" not in str(nothing_close.value)


def test_an_optional_group_without_a_plus_says_to_add_one():
    with pytest.raises(ConfigError) as info:
        compose(["experiment=quick"])
    assert str(info.value) == ("experiment=quick: the default configuration has no experiment, so add one with a "
                               "plus: +experiment=quick")
    with pytest.raises(ConfigError, match=r"\+experiment=NAME \(NAME one of .*quick"):
        compose(["experiment=nope"])


def test_a_float_for_a_whole_number_says_what_to_write():
    with pytest.raises(ConfigError, match=r"could not be converted to Integer.*\(give a whole number, e\.g\. 1000\)"):
        compose(["search.max_evaluations=1e3"])
