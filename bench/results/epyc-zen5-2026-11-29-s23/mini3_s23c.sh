#!/usr/bin/env bash
# Twenty-third session: the three-layer lase-mini continued a third time (configs/lase-mini3-s23c.toml,
# rule mini3-rule-s23c.md beside this file): mini3_s23b.sh's steps under s23c's names, the
# shipped student then being s23b's (its evaluation folder for score_mini.sh's comparison).
exec "$(dirname "$0")/mini3_s23b.sh" s23c bench/results/epyc-zen5-2026-11-29-s23/mini3-s23b/eval-mini3-s23b
