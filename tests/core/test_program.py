"""Motion programs with the numbers of the original examples (issue 13)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from core.program import Library, ProgramError, compile_program, compose, parse

ARM = ["r_shoulder", "r_elbow"]
PARTS = {
    "RIGHTARM": {"joints": ARM},
    "LEFTARM": {"joints": ["l_shoulder", "l_elbow"]},
    "RIGHTLEG": {"joints": ["r_hip", "r_knee"]},
    "LEFTLEG": {"joints": ["l_hip", "l_knee"]},
    "RIGHTWRIST": {"joints": ["r_wrist"]},
    "RIGHTFINGER": {"joints": ["f0", "f1", "f2", "f3", "f4"], "fingers": [["f0"], ["f1"], ["f2"], ["f3"], ["f4"]],
                    "positions": {"open": 0.0, "close": 1.2}, "speed": 6.0},
    "MOUTH": {"joints": ["jaw"], "positions": {"open": 0.4, "close": 0.0}, "speed": 4.0},
    "TONGUS": {"joints": ["tongue"], "positions": {"in": 0.0, "out": 0.3}, "speed": 3.0},
    "RIGHTEYE": {"joints": ["eye"], "positions": {"right": -0.5, "left": 0.5}, "speed": 5.0},
}
LIMBS = ["RIGHTARM", "LEFTARM", "RIGHTLEG", "LEFTLEG"]


def _write(folder, name, joints, times, values):
    lines = ["time_s," + ",".join(joints)]
    lines += [",".join(repr(float(v)) for v in [t, *row]) for t, row in zip(times, values)]
    (folder / f"{name}.csv").write_text("\n".join(lines) + "\n")


@pytest.fixture
def library(tmp_path):
    (tmp_path / "parts.json").write_text(json.dumps({"format": "robot_retarget.parts", "version": 1,
                                                     "parts": PARTS}))
    limbs = [j for part in LIMBS for j in PARTS[part]["joints"]]
    for k, (name, seconds) in enumerate((("WALK2", 1.2), ("WALK3", 0.8), ("WALK4", 1.1), ("TURNR", 0.6),
                                         ("BOW", 1.5), ("ABOUT", 0.9))):
        times = np.linspace(0.0, seconds, 7)
        _write(tmp_path, name, limbs, times, 0.1 * (k + 1) * np.sin(np.outer(times, np.arange(1, 9))))
    ten = np.arange(11) * 0.1  # 10 frames of 0.1 s
    _write(tmp_path, "RLIFTUP", ARM, ten, np.outer(ten, [1.0, 0.5]))
    _write(tmp_path, "RSHAKEDN", ARM, ten, np.outer(1.0 - ten, [1.0, 0.5]))
    _write(tmp_path, "CHOP", ARM, [0.0, 0.3, 0.5], [[0, 0], [1, 1], [0.2, 0.1]])
    _write(tmp_path, "turn", ["r_wrist"], [0.0, 0.4], [[0.0], [1.0]])
    _write(tmp_path, "UNEVEN", ARM, [0.0, 0.05, 0.2], [[0, 0], [0.1, 0], [0.2, 0]])
    return Library.load(tmp_path)


def _items(timeline, part):
    return [(i.module.name, round(i.start_s, 6), round(i.end_s, 6)) for i in timeline.items if i.part == part]


JANKEN = """
10 motion <do:="@JANKEN">
20 joint motion to @JANKEN     ( rock, paper, scissors )
30   item RIGHTARM <do:=RLIFTUP>
40   RIGHTFINGER <do:=31>
50   MOUTH <do:=close>
60   VOICE <do:="jan"> <from:=timer 5>
70   MOUTH <do:=parrot> <from:=timer 5>
80   VOICE <do:="ken"> <from:=timer 15>
90   MOUTH <do:=parrot> <from:=timer 15>
100  item RIGHTARM <do:=RSHAKEDN> <from:=timer 20>
110  RIGHTFINGER <do:=0> <from:=item RIGHTARM[7]>
120  VOICE <do:="pon"> <from:=item RIGHTARM[7]>
130  MOUTH <do:=parrot> <from:=item RIGHTARM[7]>
140  item TONGUS <do:=out> <from:=item RIGHTARM[back]>
150 END
"""


def test_rock_paper_scissors(library):
    timeline = compile_program(parse(JANKEN), library)
    assert _items(timeline, "RIGHTARM") == [("RLIFTUP", 0.0, 1.0), ("RSHAKEDN", 2.0, 3.0)]
    fingers = [i for i in timeline.items if i.part == "RIGHTFINGER"]
    assert [round(i.start_s, 6) for i in fingers] == [0.0, 2.7]
    assert np.allclose(fingers[0].module.values[-1], 1.2) and np.allclose(fingers[1].module.values[-1], 0.0)
    mouth = [i for i in timeline.items if i.part == "MOUTH"]
    assert [round(i.start_s, 6) for i in mouth] == [0.0, 0.5, 1.5, 2.7]
    assert [i.module.name for i in mouth] == ["close", "parrot", "parrot", "parrot"]
    assert [(text, round(start, 6)) for text, start in timeline.voice] == [("jan", 0.5), ("ken", 1.5), ("pon", 2.7)]
    assert _items(timeline, "TONGUS")[0][1] == 3.0
    assert timeline.duration_s == pytest.approx(max(i.end_s for i in timeline.items))


def test_a_modified_motion_replaces_removes_adds_and_borrows(library):
    walk2 = library.motion("WALK2")
    timeline = compile_program(parse('motion <do:="@KARATE">\njoint motion to @KARATE\n base <do:="WALK2">\n'
                                     ' item RIGHTARM <do:=CHOP>\nEND'), library)
    assert {i.part: i.module.name for i in timeline.items} == {**{p: "WALK2" for p in walk2}, "RIGHTARM": "CHOP"}
    assert all(i.start_s == 0.0 for i in timeline.items)
    timeline = compile_program(parse('motion <do:="@K2">\njoint motion to @K2\n base <do:="WALK2">\n'
                                     ' item LEFTLEG <do:=FAULT>\n item RIGHTWRIST <do:=turn>\n'
                                     ' item RIGHTARM <do:="WALK3">\nend'), library)
    parts = {i.part: (i.module.name, i.from_motion) for i in timeline.items}
    assert "LEFTLEG" not in parts and parts["RIGHTWRIST"] == ("turn", "turn")
    assert parts["RIGHTARM"] == ("WALK3", "WALK3") and parts["LEFTARM"] == ("WALK2", "WALK2")


def test_a_pileup_repeats_its_steps_back_to_back(library):
    program = parse('motion <do:="@@STEPS">\npileup motion to @@STEPS\n repeat while 2\n'
                    '  motion <do:="WALK3">\n  motion <do:="WALK4">\n end\nend')
    timeline = compile_program(program, library)
    d3, d4 = 0.8, 1.1
    starts = sorted({round(i.start_s, 6) for i in timeline.items})
    assert starts == pytest.approx([0.0, d3, d3 + d4, 2 * d3 + d4])
    assert [i.from_motion for i in timeline.items if i.part == "RIGHTLEG"] == ["WALK3", "WALK4", "WALK3", "WALK4"]
    assert timeline.duration_s == pytest.approx(2 * (d3 + d4))


def test_top_level_lines_run_in_sequence(library):
    text = "\n".join(f'motion <do:="{name}">' for name in ("TURNR", "@@FOUR", "BOW", "ABOUT"))
    text += '\npileup motion to @@FOUR\n repeat while 2\n motion <do:="WALK3">\n motion <do:="WALK4">\n end\nend'
    timeline = compile_program(parse(text), library)
    starts = {i.from_motion: [] for i in timeline.items}
    for item in timeline.items:
        if item.part == "RIGHTLEG":
            starts[item.from_motion].append(round(item.start_s, 6))
    four = 2 * (0.8 + 1.1)
    assert starts["TURNR"] == [0.0] and starts["BOW"] == [pytest.approx(0.6 + four)]
    assert starts["ABOUT"] == [pytest.approx(0.6 + four + 1.5)]
    assert timeline.duration_s == pytest.approx(0.6 + four + 1.5 + 0.9)


def test_uneven_frame_times_set_when_a_frame_is_reached(library):
    program = parse('motion <do:="@U">\njoint motion to @U\n item RIGHTARM <do:=UNEVEN> <from:=timer 10>\n'
                    ' MOUTH <do:=open> <from:=item RIGHTARM[2]>\nend')
    timeline = compile_program(program, library)
    assert _items(timeline, "MOUTH")[0][1] == pytest.approx(1.0 + 0.2)


def test_the_timing_check_against_velocity_limits(library, tmp_path):
    for seconds, expected in ((0.4, 1), (0.5, 0)):
        _write(tmp_path, "MOVE", ["r_wrist"], [0.0, seconds], [[0.0], [1.0]])
        timeline = compile_program(parse('motion <do:="@M">\njoint motion to @M\n item RIGHTWRIST <do:=MOVE>\nend'),
                                   Library.load(tmp_path), velocity={"r_wrist": 2.0})
        assert len(timeline.violations) == expected
    violation = compile_program(parse('motion <do:="@M">\njoint motion to @M\n item RIGHTWRIST <do:=MOVE>\nend'),
                                Library.load(tmp_path), velocity={"r_wrist": 1.0}).violations[0]
    assert (violation.part, violation.joint, violation.time_s) == ("RIGHTWRIST", "r_wrist", 0.0)
    assert violation.speed == pytest.approx(2.0) and violation.limit == 1.0


@pytest.mark.parametrize("text, where, words", [
    ('motion <do:="@X">\njoint motion to @Y\nend', (1, 13), "no definition of @X"),
    ('motion <do:="@@Y">\njoint motion to @Y\nend', (1, 13), "@@Y names a pile-up (@@) but @Y (line 2) is a joint"),
    ('motion <do:="@Y">\npileup motion to @@Y\nend\njoint motion to @Y\n item RIGHTFINGER <do:=32>\nend', (5, 24),
     "finger pattern 32"),
    ('motion <do:="@Y">\njoint motion to @Y\n item RIGHTARM <do:=CHOP>\n', (3, 26), "'end' closing joint motion @Y"),
    ('motion <do:="@Y">\njoint motion to @Y\n item RIGHTARM <da:=CHOP>\nend', (3, 17), "expected 'do'"),
])
def test_errors_name_the_line_and_column(library, text, where, words):
    with pytest.raises(ProgramError) as caught:
        compile_program(parse(text), library)
    assert (caught.value.line, caught.value.column) == where, str(caught.value)
    assert words in str(caught.value)


@pytest.mark.parametrize("line, value", [
    (' item RIGHTARM <do:=NOPE>', "NOPE"),                 # no module or position of that name
    (' item RIGHTARM <do:="NOPE"> <from:=timer 5>', '"NOPE"'),  # no motion to lend a module
    (' base <do:="NOPE">', '"NOPE"'),
    (' motion <do:="@NOPE">', '"@NOPE"'),
    (' RIGHTEYE <do:=wink>', "wink"),
    (' VOICE <do:=hai>', "hai"),
    (' item RIGHTFINGER <do:=40>', "40"),
    (' item NOPART <do:=CHOP>', "NOPART"),                  # errors about the part point at the part
])
def test_a_module_lines_error_points_at_the_faulty_value(library, line, value):
    """Not at the line's first word (`item`, `motion`, the part): the column a user is sent to holds
    the value that is wrong."""
    text = f'motion <do:="@K">\njoint motion to @K\n{line}\nend'
    with pytest.raises(ProgramError) as caught:
        compile_program(parse(text), library)
    where = caught.value
    assert where.line == 3 and line[where.column - 1:].startswith(value), (str(where), line)


def test_an_at_name_that_is_a_pileup_is_an_error(library):
    text = 'motion <do:="@STEPS">\npileup motion to @@STEPS\n motion <do:="WALK3">\nend'
    with pytest.raises(ProgramError, match=r"line 1, column 13: @STEPS names a joint motion \(@\) but @@STEPS"):
        compile_program(parse(text), library)
    text = 'motion <do:="@@STEPS">\njoint motion to @STEPS\n base <do:="WALK3">\nend'
    with pytest.raises(ProgramError, match=r"@@STEPS names a pile-up \(@@\) but @STEPS \(line 2\)"):
        compile_program(parse(text), library)
    # a definition that is never played is checked too
    text = 'motion <do:="WALK3">\njoint motion to @UNUSED\n motion <do:="@NOPE">\nend'
    with pytest.raises(ProgramError, match=r"line 3, column 14: no definition of @NOPE"):
        compile_program(parse(text), library)


def test_the_reviews_cases(library):
    """Repeats of a command through `item` count once; an `item` replaces a part of a combined base;
    `till` on a whole motion; FAULT in any case and on a known part only; negative timers; a line
    number alone; a missing end before the next definition; a jump between repeats."""
    face = 'motion <do:="@F">\njoint motion to @F\n item MOUTH <do:=parrot> <till:=repeat 3>\nend'
    timeline = compile_program(parse(face), library)
    mouth = [i for i in timeline.items if i.part == "MOUTH"]
    assert len(mouth) == 1 and mouth[0].repeat == 1 and mouth[0].end_s == pytest.approx(0.6)
    text = ('motion <do:="@B">\njoint motion to @A\n base <do:="WALK2">\nend\njoint motion to @B\n'
            ' base <do:="@A">\n item RIGHTARM <do:=CHOP> <from:=item RIGHTARM[back]>\nend')
    arm = [(i.module.name, round(i.start_s, 6)) for i in compile_program(parse(text), library).items
           if i.part == "RIGHTARM"]
    assert arm == [("CHOP", 1.2)]  # after WALK2's arm, which it replaces
    thrice = 'motion <do:="@T">\njoint motion to @T\n motion <do:="WALK3"> <till:=repeat 3>\nend'
    timeline = compile_program(parse(thrice), library)
    assert timeline.duration_s == pytest.approx(2.4)
    text = 'motion <do:="@G">\njoint motion to @G\n base <do:="WALK2">\n item LEFTLEG <do:=fault>\nend'
    assert "LEFTLEG" not in {i.part for i in compile_program(parse(text), library).items}
    with pytest.raises(ProgramError, match=r"line 3, column 7: .*no part 'NOPART'"):
        compile_program(parse('motion <do:="@G">\njoint motion to @G\n item NOPART <do:=FAULT>\nend'), library)
    with pytest.raises(ProgramError, match=r"line 3, column \d+: timer -5"):
        parse('motion <do:="@G">\njoint motion to @G\n MOUTH <do:=open> <from:=timer -5>\nend')
    parse('10 motion <do:="WALK2">\n20\n30')
    with pytest.raises(ProgramError, match=r"line 3, column 1: expected 'end' closing joint motion @A"):
        parse('motion <do:="@A">\njoint motion to @A\njoint motion to @B\nend')
    with pytest.raises(ProgramError, match=r"line 3, column 1: top-level 'motion' lines come before"):
        parse('joint motion to @A\nend\nmotion <do:="@A">')
    twice = 'motion <do:="@J">\njoint motion to @J\n item RIGHTARM <do:=CHOP> <till:=repeat 2>\nend'
    timeline = compile_program(parse(twice), library, velocity={"r_shoulder": 100.0, "r_elbow": 100.0})
    assert timeline.violations and all(v.speed is None for v in timeline.violations)  # CHOP ends off its start
    import json as _json
    _json.dumps(timeline.to_dict(), allow_nan=False)


def test_the_composed_motion_holds_parts_between_their_modules(library):
    timeline = compile_program(parse(JANKEN), library)
    names = ["r_shoulder", "r_elbow", "jaw", "tongue", "other"]
    times, q = compose(timeline, names, 100.0)
    assert times[-1] == pytest.approx(timeline.duration_s, abs=0.01)
    at = lambda t: q[int(round(t * 100))]  # noqa: E731
    assert at(1.5)[0] == pytest.approx(1.0) and at(2.5)[0] == pytest.approx(0.5)  # held at the top, then down
    assert at(3.1)[3] == pytest.approx(0.3, abs=1e-6) and np.all(q[:, 4] == 0.0)


def test_commands_move_parts_without_taught_data(library):
    program = parse('motion <do:="@FACE">\njoint motion to @FACE\n RIGHTEYE <do:=goggle> <till:=repeat 3>\n'
                    ' MOUTH <do:=parrot> <till:=repeat 2>\n set RIGHTWRIST <start:=0> <end:=1.5> <speed:=3>\nend')
    timeline = compile_program(program, library)
    eye = next(i.module for i in timeline.items if i.part == "RIGHTEYE")
    assert eye.values[:, 0].tolist() == [-0.5, 0.5, -0.5, 0.5][-len(eye.values):] and eye.values[-1, 0] == 0.5
    assert len(eye.values) == 4  # three sweeps, ending left
    mouth = next(i.module for i in timeline.items if i.part == "MOUTH")
    assert mouth.values[:, 0].tolist() == [0.0, 0.4, 0.0, 0.4, 0.0]  # open and close twice
    assert np.allclose(np.diff(mouth.times), 0.1)  # 0.4 rad at 4 rad/s
    wrist = next(i for i in timeline.items if i.part == "RIGHTWRIST")
    assert wrist.module.values[:, 0].tolist() == [0.0, 1.5] and wrist.end_s == pytest.approx(0.5)
    with pytest.raises(ProgramError, match=r"line 3, column 16: .*no position 'wink'"):
        compile_program(parse('motion <do:="@F">\njoint motion to @F\n RIGHTEYE <do:=wink>\nend'), library)


@pytest.mark.parametrize("line", [' RIGHTARM <do:="CHOP">', ' RIGHTARM <do:="CHOP"> <from:=timer 5>',
                                  ' set RIGHTWRIST <start:=0> <end:=1> <speed:=3>\n RIGHTWRIST <do:="turn">'])
def test_two_modules_of_one_part_at_once_are_an_error_naming_the_line(library, line):
    """A part line without `item` over a base motion's module of that part (or over another of its
    own) placed both: their keys interleaved, the part jumping between the two at every key (a new
    user's `WAIST <do:=turn>` over a baked hop: 269 rad/s on the H1's torso), said only as timing
    violations. `item` replaces the base's, and modules one after another still play."""
    text = f'motion <do:="@M">\njoint motion to @M\n base <do:="WALK2">\n{line}\nend'
    with pytest.raises(ProgramError) as caught:
        compile_program(parse(text), library)
    part = line.split()[-2] if line.startswith(" set") else line.split()[0]
    assert caught.value.line == text.count("\n") and "one part plays one module at a time" in str(caught.value)
    assert f"{part} already plays" in str(caught.value)
    assert ("`item RIGHTARM" in str(caught.value)) == (part == "RIGHTARM")
    if part == "RIGHTARM":
        replaced = compile_program(parse(text.replace(" RIGHTARM <", " item RIGHTARM <")), library)
        assert [m for m, _, _ in _items(replaced, "RIGHTARM")] == ["CHOP"]
    after = ('motion <do:="@M">\njoint motion to @M\n RIGHTARM <do:="CHOP">\n'
             ' RIGHTARM <do:="RLIFTUP"> <from:=item RIGHTARM[back]>\nend')
    assert [m for m, _, _ in _items(compile_program(parse(after), library), "RIGHTARM")] == ["CHOP", "RLIFTUP"]


def test_a_position_past_a_joints_limits_is_an_error_naming_the_line_joint_and_limits(tmp_path):
    """`set WAIST <end:=9>` on the G1 (waist yaw limits +-2.618 rad) composed a motion holding the
    waist at 9 rad and said "0 timing violation(s)"; a parts.json position past the range, or a
    taught module's value past it, did the same. Now each is refused at the value's line and column,
    naming the joint and its limits; within the limits the same lines compile."""
    from pathlib import Path

    from core.model.kinematics import KinematicTree
    from core.model.urdf import parse_urdf
    from core.program import robot_limits

    g1 = KinematicTree(parse_urdf(Path(__file__).resolve().parents[2] / "data" / "robots" / "g1" /
                                  "unitree_g1_29dof.urdf"))
    velocity, limits = robot_limits(g1)
    waist = g1.joint_names.index("waist_yaw_joint")
    assert limits["waist_yaw_joint"] == (g1.lower[waist], g1.upper[waist]) and g1.upper[waist] < 3.0
    (tmp_path / "parts.json").write_text(json.dumps({"format": "robot_retarget.parts", "version": 1, "parts": {
        "WAIST": {"joints": ["waist_yaw_joint"], "positions": {"left": 0.5, "behind": 3.5}, "speed": 2.0}}}))
    _write(tmp_path, "SPIN", ["waist_yaw_joint"], [0.0, 0.5, 1.0], [[0.0], [2.0], [4.0]])
    _write(tmp_path, "TURN", ["waist_yaw_joint"], [0.0, 0.5, 1.0], [[0.0], [1.0], [2.0]])
    library = Library.load(tmp_path)

    def program(line: str) -> str:
        return f'motion <do:="@M">\njoint motion to @M\n{line}\nend'

    cases = {" set WAIST <start:=0> <end:=9> <speed:=1>": ("line 3, column 12", "set drives waist_yaw_joint to 9"),
             " WAIST <do:=behind>": ("line 3, column 13", "behind drives waist_yaw_joint to 3.5"),
             ' base <do:="SPIN">': ("line 3, column 12", "SPIN drives waist_yaw_joint to 4 at 1.00 s")}
    for line, (where, said) in cases.items():
        with pytest.raises(ProgramError) as caught:
            compile_program(parse(program(line)), library, velocity, limits)
        message = str(caught.value)
        assert where in message and said in message and "outside its limits [-2.618, 2.618]" in message, message
        compile_program(parse(program(line)), library, velocity)  # no limits given: not checked
    for line in (" set WAIST <start:=0> <end:=2.5> <speed:=1>", " WAIST <do:=left>", ' base <do:="TURN">'):
        timeline = compile_program(parse(program(line)), library, velocity, limits)
        assert np.abs(timeline.items[0].module.values).max() <= g1.upper[waist]


@pytest.mark.parametrize("change, said", [
    (lambda d: d["parts"]["MOUTH"].update(positons=d["parts"]["MOUTH"].pop("positions")),
     "part MOUTH: unknown field(s) ['positons'] (known: joints, positions, speed, fingers)"),
    (lambda d: d.update(part=d.pop("parts")), "the file: unknown field(s) ['part']"),
    (lambda d: d["parts"]["MOUTH"].pop("joints"), "part MOUTH has no joints"),
    (lambda d: d["parts"].update(MOUTH=["jaw"]), "part MOUTH must be an object"),
])
def test_a_typo_in_parts_json_names_the_file_part_and_key(tmp_path, change, said):
    """parts.json with `positons` for `positions` was read as a part without positions (the program
    failed at `MOUTH <do:=open>` with "has no position 'open'", far from the typo), and `"part"` for
    `"parts"` as a library of no parts: the walk lent no module and the motion came out empty, exit 0."""
    from core.program import LibraryError

    data = json.loads(json.dumps({"format": "robot_retarget.parts", "version": 1, "parts": PARTS}))
    change(data)
    (tmp_path / "parts.json").write_text(json.dumps(data))
    with pytest.raises(LibraryError) as caught:
        Library.load(tmp_path)
    assert str(caught.value).startswith(f"{tmp_path / 'parts.json'}: {said}"), str(caught.value)
