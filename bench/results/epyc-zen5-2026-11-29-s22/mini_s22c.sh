#!/usr/bin/env bash
# Twenty-second session: the lase-mini continued a third time (configs/lase-mini-continue-s22c.toml,
# rule mini-rule-s22c.md beside this file): mini_s22b.sh's steps under s22c's names, the
# shipped student then being s22b's (its evaluation folder for score_mini.sh's comparison).
exec "$(dirname "$0")/mini_s22b.sh" s22c bench/results/epyc-zen5-2026-11-29-s22/mini-s22b/eval-mini-s22b
