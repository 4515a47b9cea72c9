//! How a long library step (a validation, a live replay, the report's bump-arena timing)
//! says how far it is, without drawing: the library calls a [`ProgressObserver`], and the
//! command line draws the bar.

use std::sync::Arc;

/// Told of a long step's progress (from any thread: the exhaustive check runs on all cores).
pub trait ProgressObserver: Send + Sync {
    /// A step of `len` units (`what`: "rows", "requests") begins.
    fn start(&self, what: &'static str, len: u64);
    /// `n` more units are done.
    fn advance(&self, n: u64);
    /// The step is over.
    fn finish(&self);
}

/// An optional observer, cheap to clone; the default tells no one.
#[derive(Clone, Default)]
pub struct Progress(Option<Arc<dyn ProgressObserver>>);

impl Progress {
    pub fn new(observer: impl ProgressObserver + 'static) -> Self {
        Progress(Some(Arc::new(observer)))
    }

    pub(crate) fn start(&self, what: &'static str, len: u64) {
        if let Some(o) = &self.0 {
            o.start(what, len);
        }
    }

    pub(crate) fn advance(&self, n: u64) {
        if let Some(o) = &self.0 {
            o.advance(n);
        }
    }

    pub(crate) fn finish(&self) {
        if let Some(o) = &self.0 {
            o.finish();
        }
    }
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Progress(observed)"
        } else {
            "Progress(none)"
        })
    }
}
