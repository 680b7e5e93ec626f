//! The storage seam: every byte the store reads or writes goes through [`Storage`] and
//! [`StorageFile`], so the same store runs on real files ([`FsStorage`]), on memory
//! ([`MemStorage`]) and, with the `testkit` feature, on a crash simulator (`CrashStorage`)
//! that fails the Nth operation or forgets what was not synced.
//!
//! Paths are relative to the store root and use `/` separators.

mod checked;
#[cfg(any(test, feature = "testkit"))]
mod crash;
mod fs;
mod mem;
mod mmap;
mod open_files;
mod replace;
mod seam;

pub(crate) use checked::{Checked, CheckedFile};
#[cfg(any(test, feature = "testkit"))]
pub use crash::{CrashStorage, Fault};
pub use fs::FsStorage;
pub use mem::MemStorage;
pub(crate) use mmap::Prefault;
// Building blocks of the store's own files, public for sessdb's formats crate and tests:
// outside the semver promise.
#[doc(hidden)]
pub use mmap::WriteWindow;
#[doc(hidden)]
pub use replace::{FileWriter, Replacement, temp_name};
pub(crate) use seam::parent_dir;
pub use seam::{FileView, LockGuard, OpenMode, Storage, StorageFile};
