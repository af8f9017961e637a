// One peer's drain, on the bench's Postgres, in a schema of its own:
//   node run.mjs <graphile-worker|pg-boss> <postgres url> <schema> <jobs>
// Adds <jobs> no-op jobs, then times workers until all are done, counted in
// the database (not in a handler). Prints one JSON line: {"peer", "jobs", "seconds", "jobs_per_s"}.
import pg from "pg";

const [peer, connectionString, schema, jobsArg] = process.argv.slice(2);
const jobs = Number(jobsArg ?? 20000);
if (!["graphile-worker", "pg-boss"].includes(peer) || !connectionString || !/^[a-z_][a-z0-9_]*$/.test(schema ?? "")) {
  console.error("usage: node run.mjs <graphile-worker|pg-boss> <postgres url> <schema> <jobs>");
  process.exit(2);
}
const BATCH = 1000;
const pool = new pg.Pool({ connectionString, max: 2 });

/** Planner statistics for the peer's tables, as a production database has them (autovacuum
 * analyzes within a minute of a load); ours get the same before their drain (`a2-bench`). */
async function analyze() {
  const { rows } = await pool.query("SELECT tablename FROM pg_tables WHERE schemaname = $1", [schema]);
  for (const { tablename } of rows) await pool.query(`ANALYZE ${schema}."${tablename}"`);
}

/** Poll `sql` (one count) until `done(count)`, every 10 ms; the seconds it took from `start`. Gives up after 2 minutes. */
async function until(sql, done, start) {
  for (;;) {
    const { rows } = await pool.query(sql);
    if (done(Number(rows[0].count))) return (performance.now() - start) / 1000;
    if (performance.now() - start > 120_000) throw new Error(`${peer} stalled: ${rows[0].count} after 2 minutes (${sql})`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function graphileWorker() {
  const { Logger, makeWorkerUtils, run } = await import("graphile-worker");
  // Silent, as a production worker's job log would go elsewhere: a line a job on stdout would slow it.
  const logger = new Logger(() => () => {});
  const utils = await makeWorkerUtils({ connectionString, schema, logger });
  await utils.migrate();
  for (let added = 0; added < jobs; added += BATCH) {
    const batch = Array.from({ length: Math.min(BATCH, jobs - added) }, (_, i) => ({ identifier: "noop", payload: { n: added + i } }));
    await utils.addJobs(batch);
  }
  await utils.release();
  await analyze();
  const start = performance.now();
  const runner = await run({
    connectionString,
    schema,
    concurrency: 10,
    noHandleSignals: true,
    logger,
    taskList: { noop: async () => {} },
    preset: { worker: { localQueue: { size: 200 }, completeJobBatchDelay: 0 } },
  });
  const seconds = await until(`SELECT COUNT(*) AS count FROM ${schema}._private_jobs`, (left) => left === 0, start);
  await runner.stop();
  return seconds;
}

async function pgBoss() {
  const { default: PgBoss } = await import("pg-boss");
  const boss = new PgBoss({ connectionString, schema, supervise: false, schedule: false });
  boss.on("error", (error) => console.error(`pg-boss: ${error.message}`));
  await boss.start();
  await boss.createQueue("noop");
  for (let added = 0; added < jobs; added += BATCH) {
    const batch = Array.from({ length: Math.min(BATCH, jobs - added) }, (_, i) => ({ name: "noop", data: { n: added + i } }));
    await boss.insert(batch);
  }
  await analyze();
  const start = performance.now();
  for (let i = 0; i < 4; i++) {
    await boss.work("noop", { batchSize: 1000, pollingIntervalSeconds: 0.5 }, async () => {});
  }
  const seconds = await until(
    `SELECT COUNT(*) AS count FROM ${schema}.job WHERE name = 'noop' AND state = 'completed'`,
    (completed) => completed >= jobs,
    start,
  );
  await boss.stop({ graceful: false, wait: true });
  return seconds;
}

try {
  await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  const seconds = peer === "graphile-worker" ? await graphileWorker() : await pgBoss();
  console.log(JSON.stringify({ peer, jobs, seconds, jobs_per_s: Math.round(jobs / seconds) }));
} finally {
  await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
  await pool.end();
}
