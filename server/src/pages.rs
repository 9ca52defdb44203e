//! Reading a log forwards, a page at a time, until a short page: the plan
//! log for the board and the streams, a run's log for its stream, its cost
//! and its whole history, the run log for webhooks. Each of them wrote the
//! same loop (read after the last seq, stop at a short page) by hand.
//!
//! # Layout
//! - [`Sequenced`]: a row that knows its place in its log;
//! - [`Pages`]: the pages after a seq, one `next` at a time.

use std::future::Future;

/// A row of a log, ordered by its `seq`.
pub trait Sequenced {
    fn seq(&self) -> i64;
}

impl Sequenced for crate::store::StoredEvent {
    fn seq(&self) -> i64 {
        self.seq
    }
}

impl Sequenced for crate::store::StoredRunEntry {
    fn seq(&self) -> i64 {
        self.seq
    }
}

/// The pages of a log after a seq. `read(after, size)` reads one page;
/// a page shorter than `size` is the last one, and an error ends the pages.
pub struct Pages<F> {
    after: i64,
    size: u32,
    read: F,
    done: bool,
}

impl<F> Pages<F> {
    pub fn after(after: i64, size: u32, read: F) -> Pages<F> {
        Pages {
            after,
            size,
            read,
            done: false,
        }
    }

    /// The seq of the last row read (where the next page would start).
    pub fn last(&self) -> i64 {
        self.after
    }

    /// The next page, `None` after the last one (never an empty page).
    pub async fn next<T, E, Fut>(&mut self) -> Option<Result<Vec<T>, E>>
    where
        F: FnMut(i64, u32) -> Fut,
        Fut: Future<Output = Result<Vec<T>, E>>,
        T: Sequenced,
    {
        if self.done {
            return None;
        }
        match (self.read)(self.after, self.size).await {
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
            Ok(rows) => {
                self.done = rows.len() < self.size as usize;
                match rows.last() {
                    Some(last) => {
                        self.after = last.seq();
                        Some(Ok(rows))
                    }
                    None => None,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Row(i64);
    impl Sequenced for Row {
        fn seq(&self) -> i64 {
            self.0
        }
    }

    /// A log of `n` rows (seq 1..=n) read by pages, counting the reads.
    async fn read_all(n: i64, size: u32) -> (Vec<i64>, usize) {
        let mut reads = 0;
        let mut pages = Pages::after(0, size, |after: i64, size: u32| {
            reads += 1;
            let rows: Vec<Row> = (after + 1..=n).take(size as usize).map(Row).collect();
            async move { Ok::<_, ()>(rows) }
        });
        let mut seen = Vec::new();
        while let Some(page) = pages.next().await {
            seen.extend(page.unwrap().into_iter().map(|r| r.0));
        }
        (seen, reads)
    }

    #[tokio::test]
    async fn every_row_comes_once_in_order_and_a_short_page_ends_the_reading() {
        let (seen, reads) = read_all(1_234, 500).await;
        assert_eq!(seen, (1..=1_234).collect::<Vec<_>>());
        assert_eq!(reads, 3, "500, 500, then 234: the short page is the last");
        // A log that ends on a page's edge costs one empty read more.
        let (seen, reads) = read_all(1_000, 500).await;
        assert_eq!(seen.len(), 1_000);
        assert_eq!(reads, 3);
        let (seen, reads) = read_all(0, 500).await;
        assert!(seen.is_empty());
        assert_eq!(reads, 1);
    }

    #[tokio::test]
    async fn an_error_ends_the_pages_after_it_is_handed_on() {
        let mut pages = Pages::after(7, 10, |_: i64, _: u32| async { Err::<Vec<Row>, _>("down") });
        assert!(matches!(pages.next().await, Some(Err("down"))));
        assert!(pages.next().await.is_none());
        assert_eq!(pages.last(), 7);
    }
}
