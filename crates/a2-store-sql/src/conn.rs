//! The seam a backend implements: run a statement on a connection or in a
//! transaction. Everything above it is written once for every SQL database.

use a2_store::StoreError;

use crate::value::{Arg, Row};

#[async_trait::async_trait]
pub trait Conn: Send {
    /// Run `sql` with `args` and return its rows.
    async fn fetch(&mut self, sql: &str, args: Vec<Arg>) -> Result<Vec<Row>, StoreError>;

    /// Run `sql` with `args` and return how many rows it changed.
    async fn execute(&mut self, sql: &str, args: Vec<Arg>) -> Result<u64, StoreError>;

    async fn fetch_optional(&mut self, sql: &str, args: Vec<Arg>) -> Result<Option<Row>, StoreError> {
        Ok(self.fetch(sql, args).await?.into_iter().next())
    }

    async fn fetch_one(&mut self, sql: &str, args: Vec<Arg>) -> Result<Row, StoreError> {
        self.fetch_optional(sql, args)
            .await?
            .ok_or_else(|| StoreError::Schema { message: "a statement that returns one row returned none".into() })
    }
}

/// A transaction: a connection that commits, or rolls back when dropped.
#[async_trait::async_trait]
pub trait Transaction: Conn {
    async fn commit(self: Box<Self>) -> Result<(), StoreError>;
}

/// The [`Conn`] and [`Transaction`] impls of a sqlx driver, stamped in the
/// backend crate (which has sqlx): `Link<C>` wraps any of the driver's
/// connections, pooled or in a transaction. The backend supplies
/// `bind(Query, Arg) -> Query`, `decode(&Row, columns) -> Result<a2_store_sql::Row, _>`
/// and `db_error`, each in its own dialect.
#[macro_export]
macro_rules! sqlx_link {
    ($db:ty, $connection:ty) => {
        /// A connection or transaction of the driver, as the shared layer uses it.
        pub(crate) struct Link<C> {
            pub conn: C,
            /// Statements are prepared by name and kept on the connection;
            /// `false` through a transaction-mode pooler, where a named
            /// statement would meet another client's on the same server.
            pub prepared: bool,
        }

        impl<C> Link<C> {
            pub(crate) fn new(conn: C) -> Self {
                Self { conn, prepared: true }
            }

            /// Statements sent unnamed, parsed anew each time.
            #[allow(dead_code)]
            pub(crate) fn unnamed(conn: C) -> Self {
                Self { conn, prepared: false }
            }
        }

        fn query(sql: &str, args: Vec<$crate::Arg>, prepared: bool) -> Query<'_> {
            args.into_iter().fold(sqlx::query(sql).persistent(prepared), bind)
        }

        #[async_trait::async_trait]
        impl<C: std::ops::DerefMut<Target = $connection> + Send> $crate::Conn for Link<C> {
            async fn fetch(
                &mut self,
                sql: &str,
                args: Vec<$crate::Arg>,
            ) -> Result<Vec<$crate::Row>, a2_store::StoreError> {
                use sqlx::{Column as _, Row as _};
                let rows = query(sql, args, self.prepared).fetch_all(&mut *self.conn).await.map_err(db_error)?;
                let columns: std::sync::Arc<[String]> = rows
                    .first()
                    .map(|row| row.columns().iter().map(|c| c.name().to_owned()).collect())
                    .unwrap_or_default();
                rows.iter().map(|row| decode(row, columns.clone())).collect()
            }

            async fn execute(&mut self, sql: &str, args: Vec<$crate::Arg>) -> Result<u64, a2_store::StoreError> {
                Ok(query(sql, args, self.prepared).execute(&mut *self.conn).await.map_err(db_error)?.rows_affected())
            }
        }

        #[async_trait::async_trait]
        impl $crate::Transaction for Link<sqlx::Transaction<'static, $db>> {
            async fn commit(self: Box<Self>) -> Result<(), a2_store::StoreError> {
                self.conn.commit().await.map_err(db_error)
            }
        }
    };
}
