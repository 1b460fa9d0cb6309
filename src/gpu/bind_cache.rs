//! Bind groups made once per (kernel, buffers) and reused by every later run, so recording an
//! op allocates nothing.
//!
//! Keys name buffers by their process-unique ids, never by the wgpu handle, so a cached
//! group does not keep a buffer alive past its owner: when a device array is dropped, every
//! group that binds it is forgotten ([`BindGroupCache::forget`]) and the memory goes as
//! soon as no recorded work uses it.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Mutex;

/// One bound range of a buffer: (buffer id, offset, size) in bytes.
pub(crate) type BoundRange = (u64, u64, u64);

/// What selects one bind group.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct BindKey {
    /// The bind-group layout's id (shared by the variants of a shader).
    pub(crate) layouts: u64,
    pub(crate) ranges: Vec<BoundRange>,
}

/// Past this many groups the cache starts over (a safety net; real programs bind a few
/// dozen combinations).
const CAPACITY: usize = 1 << 14;

#[derive(Default)]
pub(crate) struct BindGroupCache {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    groups: HashMap<BindKey, wgpu::BindGroup, Fast>,
    /// The keys that bind each buffer id.
    by_buffer: HashMap<u64, Vec<BindKey>, Fast>,
}

/// Keys are small integers made by this process, not attacker-chosen: a multiply-rotate hash
/// (FxHash's) is enough and keeps the lookup on every recorded dispatch cheap. Also the
/// hash of ELL's value tables (keys: value bit patterns), where SipHash would cost more than
/// the rest of the coding.
pub(crate) type Fast = BuildHasherDefault<FxHasher>;

#[derive(Default)]
pub(crate) struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }
    fn write_u64(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn write_usize(&mut self, word: usize) {
        self.write_u64(word as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

impl BindGroupCache {
    /// The group for `key`, made by `make` on a miss (whose error is returned, nothing cached).
    pub(crate) fn get_or_try_insert<E>(
        &self,
        key: BindKey,
        make: impl FnOnce() -> Result<wgpu::BindGroup, E>,
    ) -> Result<wgpu::BindGroup, E> {
        if let Some(group) = self.lock().groups.get(&key) {
            return Ok(group.clone());
        }
        // Made outside the lock: creation takes error scopes, and other threads go on.
        let group = make()?;
        let mut state = self.lock();
        if state.groups.len() >= CAPACITY {
            state.groups.clear();
            state.by_buffer.clear();
        }
        for range in &key.ranges {
            state.by_buffer.entry(range.0).or_default().push(key.clone());
        }
        state.groups.insert(key, group.clone());
        Ok(group)
    }

    /// Drops every group that binds buffer `id` (its owner is gone).
    pub(crate) fn forget(&self, id: u64) {
        let mut state = self.lock();
        let Some(keys) = state.by_buffer.remove(&id) else { return };
        for key in keys {
            state.groups.remove(&key);
            for range in key.ranges.iter().filter(|r| r.0 != id) {
                if let Some(list) = state.by_buffer.get_mut(&range.0) {
                    list.retain(|k| *k != key);
                }
            }
        }
    }

    /// Groups cached now.
    pub(crate) fn len(&self) -> usize {
        self.lock().groups.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}
