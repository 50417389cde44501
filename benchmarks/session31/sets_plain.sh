#!/usr/bin/env bash
# Session 31's issue-13 sweep, timed as evo now times (plain launches), one set on one GPU (~9.5 minutes).
# A sweep times the libraries again on its six smallest shapes only when it finishes (a cut one skips that
# check), so PICKS defaults to 12 shortlist picks a shape, which session 28's H100 grid125 sweep reached on
# every shape within 540 s (13-18 each); PICKS=24 is the budget, cut at SECONDS.
#   OUT=/some/folder SET=grid125 bash benchmarks/session31/sets_plain.sh
#   OUT=/some/folder SET=llm_layers PICKS=24 bash benchmarks/session31/sets_plain.sh
. benchmarks/device_common.sh
device_setup
SET=${SET:-grid125} PICKS=${PICKS:-12} SECONDS_CUT=${SECONDS_CUT:-540}
shortlist_sweep 0 "$SET" "$PICKS" "$SECONDS_CUT"
tail -16 "$OUT/${SET}_sweep.log"
grep -h "timed again alone" "$OUT/${SET}_sweep.log" || echo "no library_drift line: the sweep was cut before it finished"
device_done
