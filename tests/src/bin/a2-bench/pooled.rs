//! `--pooled`: the jobs drain, the log drain and the append ratio through a
//! PgBouncer in transaction mode (`?pgbouncer=true`) beside the same figures
//! direct, on the same Postgres, interleaved round by round. The raw INSERT
//! that appends are held against is the direct one in both.

use super::drop_schema;
use super::peers::{median, ours};

const JOBS: usize = 20_000;
const ROUNDS: usize = 3;

pub async fn run(url: &str) -> Result<(), String> {
    let pooler = a2_test_support::pooler_in_front_of(url)?;
    let pooled_url = format!("{pooler}&sslmode=disable");
    // Per round: raw INSERTs/s, then appends/s, jobs/s and log events/s direct, then the same pooled.
    let mut rows: Vec<[f64; 7]> = Vec::new();
    for round in 1..=ROUNDS {
        let schema = format!("a2_pooled_{}_{round}", std::process::id());
        let direct = ours(url, url, &schema).await;
        drop_schema(url, &schema).await;
        let pooled_schema = format!("{schema}_p");
        let pooled = ours(&pooled_url, url, &pooled_schema).await;
        drop_schema(url, &pooled_schema).await;
        let ([da, raw, dj, dl], [pa, _, pj, pl]) = (direct?, pooled?);
        println!(
            "bench pooled round={round} raw_insert_per_s={raw:.0} direct append_per_s={da:.0} jobs_per_s={dj:.0} log_events_per_s={dl:.0} \
             pooled append_per_s={pa:.0} jobs_per_s={pj:.0} log_events_per_s={pl:.0}"
        );
        rows.push([raw, da, dj, dl, pa, pj, pl]);
    }
    let column = |i: usize| median(&mut rows.iter().map(|r| r[i]).collect::<Vec<_>>());
    let ratio = |i: usize| median(&mut rows.iter().map(|r| r[i] / r[0]).collect::<Vec<_>>());
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
