//! `--pooled`: the jobs drain, the log drain and the append ratio through a
//! PgBouncer in transaction mode (`?pgbouncer=true`) beside the same figures
//! direct, on the same Postgres, interleaved round by round. The raw INSERT
//! that appends are held against is the direct one in both.

use a2_e2e::{open_with, OpenOptions};

use super::{appends, contract, drain_shape, drop_schema, raw_inserts, Server, Shape};

const JOBS: usize = 20_000;
const ROUNDS: usize = 3;

/// Appends a second, the jobs drain and the log drain, with the store opened at `store_url`.
async fn figures(store_url: &str, direct_url: &str, schema: &str) -> Result<[f64; 3], String> {
    let options = OpenOptions { schema: Some(schema.to_owned()), max_connections: Some(32), ..OpenOptions::default() };
    let store = open_with(store_url, options).await.map_err(|e| e.to_string())?;
    let server =
        Server::builder(contract().map_err(|e| e.to_string())?, store.clone()).build().map_err(|e| e.to_string())?;
    let appended = appends(&server).await?;
    let analyze = Some((direct_url, schema));
    let jobs = drain_shape(store.clone(), 200, JOBS / 200, Shape::Jobs, "pooled-jobs", analyze).await?;
    let log = drain_shape(store, 200, JOBS / 200, Shape::Log, "pooled-log", analyze).await?;
    Ok([appended, jobs, log])
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

pub async fn run(url: &str) -> Result<(), String> {
    let pooler = a2_test_support::pooler_in_front_of(url)?;
    let pooled_url = format!("{pooler}&sslmode=disable");
    let mut rows: Vec<[f64; 7]> = Vec::new();
    for round in 1..=ROUNDS {
        let schema = format!("a2_pooled_{}_{round}", std::process::id());
        let direct = figures(url, url, &schema).await;
        let raw = raw_inserts(url, &schema).await;
        drop_schema(url, &schema).await;
        let pooled_schema = format!("{schema}_p");
        let pooled = figures(&pooled_url, url, &pooled_schema).await;
        drop_schema(url, &pooled_schema).await;
        let (raw, [da, dj, dl], [pa, pj, pl]) = (raw?, direct?, pooled?);
        println!(
            "bench pooled round={round} raw_insert_per_s={raw:.0} direct append_per_s={da:.0} jobs_per_s={dj:.0} log_events_per_s={dl:.0} \
             pooled append_per_s={pa:.0} jobs_per_s={pj:.0} log_events_per_s={pl:.0}"
        );
        rows.push([raw, da, dj, dl, pa, pj, pl]);
    }
    let column = |i: usize| median(rows.iter().map(|r| r[i]).collect());
    let ratio = |i: usize| median(rows.iter().map(|r| r[i] / r[0]).collect());
    let (dj, dl, pj, pl) = (column(2), column(3), column(5), column(6));
    println!("bench postgres drain shape=jobs events={JOBS} jobs_per_s={dj:.0}");
    println!("bench postgres drain shape=log events={JOBS} events_per_s={dl:.0}");
    println!("bench postgres append_vs_raw_insert ratio={:.2}", ratio(1));
    println!("bench postgres_pooled drain shape=jobs events={JOBS} jobs_per_s={pj:.0}");
    println!("bench postgres_pooled drain shape=log events={JOBS} events_per_s={pl:.0}");
    println!("bench postgres_pooled append_vs_raw_insert ratio={:.2}", ratio(4));
    println!(
        "bench ratio pooled_vs_direct_drain={:.2} pooled_vs_direct_log={:.2} pooled_vs_direct_append={:.2}",
        pj / dj,
        pl / dl,
        column(4) / column(1)
    );
    Ok(())
}
