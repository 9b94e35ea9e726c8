// The BullMQ side of issue 42's comparison: the same two workloads as
// bench/chain_loop.sh and ductwork_fanout_bench, on BullMQ with a local
// Redis, so a ratio is measured in one run on one machine.
//
//   node bullmq_bench.js chains N [WORKERS CONCURRENCY]
//     N chains of 10 steps: each job adds its chain's next job from its
//     processor (BullMQ's way of chaining), the first jobs are added in one
//     addBulk before the workers start; prints steps/s from the workers'
//     start to the last step's completion.
//   node bullmq_bench.js fanout N [WORKERS CONCURRENCY]
//     one flow: a parent (the collapse) over N children; prints the seconds
//     from adding the flow to the parent's completion, the parent summing
//     its children's values.
//
// Workers are separate Node processes (default 2, like the forking host's
// two worker threads on a 2-core machine), each with CONCURRENCY jobs in
// flight (default 50). Completed jobs are kept, as ductwork keeps its rows.
// REDIS_URL (default redis://127.0.0.1:6379) names the server; the queue is
// emptied first.
'use strict';
const { Queue, Worker, FlowProducer } = require('bullmq');
const { fork } = require('child_process');

const connection = (() => {
  const url = new URL(process.env.REDIS_URL || 'redis://127.0.0.1:6379');
  return { host: url.hostname, port: Number(url.port || 6379), maxRetriesPerRequest: null };
})();
const CHAIN_LENGTH = 10;

function workerMain(kind, concurrency) {
  const name = kind === 'chains' ? 'dw-chains' : 'dw-fanout';
  const next = new Queue(name, { connection });
  const worker = new Worker(name, async (job) => {
    if (kind === 'chains') {
      const n = job.data.n + 1;
      if (job.data.step + 1 < CHAIN_LENGTH) {
        await next.add('inc', { chain: job.data.chain, step: job.data.step + 1, n });
      }
      return n;
    }
    if (job.name === 'sum') {
      const values = Object.values(await job.getChildrenValues());
      return values.reduce((a, b) => a + b, 0);
    }
    return job.data.i * 2;
  }, { connection, concurrency });
  process.on('message', async () => { await worker.close(); await next.close(); process.exit(0); });
}

function startWorkers(kind, workers, concurrency) {
  const children = [];
  for (let i = 0; i < workers; i++) children.push(fork(__filename, ['worker', kind, String(concurrency)]));
  return children;
}

async function stopWorkers(children) {
  await Promise.all(children.map((c) => new Promise((resolve) => { c.on('exit', resolve); c.send('stop'); })));
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function chains(n, workers, concurrency) {
  const queue = new Queue('dw-chains', { connection });
  await queue.obliterate({ force: true });
  const jobs = [];
  for (let c = 0; c < n; c++) jobs.push({ name: 'inc', data: { chain: c, step: 0, n: 0 } });
  for (let i = 0; i < jobs.length; i += 1000) await queue.addBulk(jobs.slice(i, i + 1000));
  const started = process.hrtime.bigint();
  const children = startWorkers('chains', workers, concurrency);
  const total = n * CHAIN_LENGTH;
  for (;;) {
    const counts = await queue.getJobCounts('completed', 'failed');
    if (counts.failed > 0) throw new Error(`${counts.failed} jobs failed`);
    if (counts.completed >= total) break;
    await sleep(20);
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  await stopWorkers(children);
  await queue.close();
  console.log(`bullmq chains: ${n} x ${CHAIN_LENGTH} steps in ${seconds.toFixed(3)} s = ${Math.round(total / seconds)} steps/s` +
              ` (${workers} workers x ${concurrency})`);
}

async function fanout(n, workers, concurrency) {
  const queue = new Queue('dw-fanout', { connection });
  await queue.obliterate({ force: true });
  const children = startWorkers('fanout', workers, concurrency);
  await sleep(500);  // the workers are up before the clock starts, as a started host is
  const flows = new FlowProducer({ connection });
  const started = process.hrtime.bigint();
  const kids = [];
  for (let i = 0; i < n; i++) kids.push({ name: 'double', queueName: 'dw-fanout', data: { i } });
  const tree = await flows.add({ name: 'sum', queueName: 'dw-fanout', data: {}, children: kids });
  let value;
  for (;;) {
    const parent = await queue.getJob(tree.job.id);
    if (parent && parent.finishedOn) { value = parent.returnvalue; break; }
    if (parent && parent.failedReason) throw new Error(parent.failedReason);
    await sleep(50);
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  await stopWorkers(children);
  await flows.close();
  await queue.close();
  const expected = n * (n - 1);
  if (Number(value) !== expected) throw new Error(`sum ${value}, expected ${expected}`);
  console.log(`bullmq fanout: ${n} children in ${seconds.toFixed(3)} s (${workers} workers x ${concurrency})`);
}

const [mode, a, b, c] = process.argv.slice(2);
if (mode === 'worker') {
  workerMain(a, Number(b));
} else if (mode === 'chains' || mode === 'fanout') {
  const run = mode === 'chains' ? chains : fanout;
  run(Number(a || 3000), Number(b || 2), Number(c || 50)).then(() => process.exit(0), (e) => {
    console.error(`bullmq_bench: ${e.message}`);
    process.exit(1);
  });
} else {
  console.error('usage: node bullmq_bench.js chains|fanout N [WORKERS CONCURRENCY]');
  process.exit(2);
}
