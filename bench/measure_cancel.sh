#!/bin/bash
# Time from `ductwork cancel` returning to no open execution of the run, for a 1,000-wide fan-out of Sleep steps.
set -e
D=${DUCTWORK_BINARY:-$(cd "$(dirname "$0")/.." && pwd)/build/bin/ductwork}
PLUGINS=${DUCTWORK_PLUGINS:-$(dirname "$D")/../lib/plugins}
W=$(mktemp -d); cd $W; mkdir pipelines
cat > ductwork.yml <<YML
pipelines: "*"
database: {adapter: sqlite, path: db.sqlite3}
plugins: {directory: $PLUGINS}
definitions: {directory: pipelines}
job_worker: {polling_timeout: 0.1}
pipeline_advancer: {polling_timeout: 0.1}
supervisor: {polling_timeout: 0.2}
YML
printf 'pipeline: Wide\nsteps:\n  - start: Range\n  - expand: Sleep\n  - collapse: Sum\n' > pipelines/w.yml
for i in 1 2 3; do
  id=$($D trigger Wide 1000)
  $D start > host.log 2>&1 & host=$!
  until [ "$(sqlite3 db.sqlite3 "select count(*) from steps where klass='Sleep' and status='completed' and run_id in (select id from runs where pipeline_id='$id')")" -ge 20 ]; do sleep 0.05; done
  $D cancel $id > /dev/null; t0=$(date +%s.%N)
  until [ "$(sqlite3 db.sqlite3 "select count(*) from executions e join jobs j on j.id=e.job_id join steps s on s.id=j.step_id join runs r on r.id=s.run_id where r.pipeline_id='$id' and e.completed_at is null")" = 0 ]; do sleep 0.01; done
  t1=$(date +%s.%N)
  echo "run $i: open executions gone $(echo "$t1 - $t0" | bc) s after cancel returned"
  kill -INT $host; wait $host || true
done
rm -rf $W
