#!/usr/bin/env bash
# Fifth session, fourth command, one H200 (about 2 minutes): does PDL's gain need the early
# griddepcontrol.launch_dependents? overhead.py on the first command's export as built (wait first,
# trigger after the loads) and on the same sources with the trigger line removed (implicit trigger at
# exit), one after the other in one lease. Both exports travel untracked (benchmarks/session5/export_*:
# dispatch/exported/ of fifth_session/session_files.tgz, cubins compiled off the machine).
source "$(dirname "$0")/setup_dispatch.sh"
cd /tmp
for e in notrigger fifth notrigger; do
  echo "== $e $(date -u +%T)"
  timeout 150 python3 $REPO/benchmarks/dispatch/overhead.py $REPO/benchmarks/session5/export_$e 2>&1 | sed -n '/^ *shape/,/^eager speedup/p' > $OUT/overhead_$e.$(date +%s).log
done
ls $OUT
