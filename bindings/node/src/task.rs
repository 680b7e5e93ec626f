//! One task type for every call that does I/O: the closure runs on libuv's thread pool, off
//! the JavaScript thread, and its result resolves (or its error rejects) the Promise.

use napi::bindgen_prelude::{ToNapiValue, TypeName};
use napi::{Env, Task};

/// Work to run off the JavaScript thread.
pub struct Job<T> {
    work: Option<Box<dyn FnOnce() -> napi::Result<T> + Send>>,
}

impl<T> Job<T> {
    /// A job running `work`.
    pub fn new(work: impl FnOnce() -> napi::Result<T> + Send + 'static) -> Self {
        Self {
            work: Some(Box::new(work)),
        }
    }
}

impl<T: ToNapiValue + TypeName + Send + 'static> Task for Job<T> {
    type Output = T;
    type JsValue = T;

    fn compute(&mut self) -> napi::Result<T> {
        match self.work.take() {
            Some(work) => work(),
            None => Err(crate::error::invalid("a task ran twice")),
        }
    }

    fn resolve(&mut self, _env: Env, output: T) -> napi::Result<T> {
        Ok(output)
    }
}
