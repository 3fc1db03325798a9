"""Every option of the headless path that adds to a list has a ``--no-...`` pair that
takes an item out (issue 28), so a new list option cannot arrive without one."""

from __future__ import annotations

import argparse

from sandbox_setup.cli import build_parser


def _options(kind: str) -> set[str]:
    parser = build_parser()
    group = next(g for g in parser._action_groups if g.title == "headless options")
    return {
        a.option_strings[-1]
        for a in group._group_actions
        if isinstance(a, argparse._AppendAction) and a.option_strings[-1].startswith(kind)
    }


def test_every_list_option_has_its_removing_pair() -> None:
    adds = {flag for flag in _options("--") if not flag.startswith("--no-")}
    assert adds == {"--workspace", "--allow-domain", "--allow-loopback-port", "--pass-env"}
    assert {f"--no-{flag[2:]}" for flag in adds} == _options("--no-")


def test_the_pairs_parse_like_the_options() -> None:
    args = build_parser().parse_args(
        ["--headless", "--no-allow-loopback-port", "10100", "--no-pass-env", "A", "--no-pass-env",
         "B", "--no-workspace", "/srv/p", "--no-allow-domain", "example.com"]
    )  # fmt: skip
    assert args.no_allow_loopback_port == ["10100"]
    assert args.no_pass_env == ["A", "B"]
    assert args.no_workspace == ["/srv/p"] and args.no_allow_domain == ["example.com"]
