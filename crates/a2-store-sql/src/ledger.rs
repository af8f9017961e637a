//! Whose schema a database holds, read from its migration ledger
//! (`_sqlx_migrations`): a table that happens to be named `a2_events` proves
//! nothing, a ledger whose migrations carry A2's checksums does.

/// What a migration ledger says about the schema beside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ledger {
    /// No migration recorded yet: a first open that stopped before its first migration.
    Empty,
    /// A2's: every migration this binary knows that was applied came from its own file
    /// (versions this binary does not know are a newer A2's, judged elsewhere).
    Ours,
    /// Another program's ledger, or A2's with a migration applied from another file.
    Foreign { why: String },
}

/// Judge `applied` (version, checksum) rows against this binary's `known` migrations.
pub fn read_ledger<'a>(known: impl IntoIterator<Item = (i64, &'a [u8])>, applied: &[(i64, Vec<u8>)]) -> Ledger {
    if applied.is_empty() {
        return Ledger::Empty;
    }
    let known: Vec<(i64, &[u8])> = known.into_iter().collect();
    if !applied.iter().any(|(version, _)| known.iter().any(|(v, _)| v == version)) {
        return Ledger::Foreign {
            why: "has a migration ledger (_sqlx_migrations) with none of A2's migrations in it".into(),
        };
    }
    for (version, checksum) in applied {
        if let Some((_, ours)) = known.iter().find(|(v, _)| v == version) {
            if *ours != checksum.as_slice() {
                return Ledger::Foreign {
                    why: format!(
                        "has a migration ledger (_sqlx_migrations) that records migration {version} from a file not A2's"
                    ),
                };
            }
        }
    }
    Ledger::Ours
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ledger_is_ours_only_with_our_checksums() {
        let known = [(1, &b"one"[..]), (2, &b"two"[..])];
        let ledger = |rows: &[(i64, &[u8])]| {
            let rows: Vec<(i64, Vec<u8>)> = rows.iter().map(|(v, c)| (*v, c.to_vec())).collect();
            read_ledger(known, &rows)
        };
        assert_eq!(ledger(&[]), Ledger::Empty);
        assert_eq!(ledger(&[(1, b"one")]), Ledger::Ours);
        assert_eq!(ledger(&[(1, b"one"), (2, b"two"), (3, b"newer")]), Ledger::Ours);
        assert!(matches!(ledger(&[(1, b"other")]), Ledger::Foreign { .. }));
        assert!(
            matches!(ledger(&[(1, b"one"), (2, b"other")]), Ledger::Foreign { why } if why.contains("migration 2"))
        );
        assert_eq!(ledger(&[(2, b"two")]), Ledger::Ours, "a missing migration is judged elsewhere");
        assert!(matches!(ledger(&[(20240101, b"app")]), Ledger::Foreign { why } if why.contains("none of A2's")));
    }
}
