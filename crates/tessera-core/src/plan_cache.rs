//! A small least-recently-used cache of plans keyed by input signature ([`PlanKey`]: the input
//! shapes and dtypes plus the values of folded inputs), shared by the backends: `cpu` keeps
//! tract's runnable plans in it, the GPU backends their lowered [`crate::Plan`]s (and the later
//! stages of a staged plan by the counts they were made for: another key type `K`).
//!
//! The cache is a short vector searched linearly (a session sees a handful of signatures); it
//! hands out clones, so `P` is typically an `Arc`.

use crate::model::specialize::PlanKey;

/// At most `capacity` plans; inserting one more evicts the least recently used.
#[derive(Debug)]
pub struct PlanCache<P, K = PlanKey> {
    capacity: usize,
    /// Most recently used last.
    entries: Vec<(K, P)>,
}

impl<P: Clone, K: PartialEq> PlanCache<P, K> {
    /// An empty cache holding at most `capacity` plans (0 keeps none).
    pub fn new(capacity: usize) -> Self {
        PlanCache {
            capacity,
            entries: Vec::new(),
        }
    }

    /// The plan for `key`, now the most recently used, if the cache holds one.
    pub fn get(&mut self, key: &K) -> Option<P> {
        let index = self.entries.iter().position(|(k, _)| k == key)?;
        let entry = self.entries.remove(index);
        let plan = entry.1.clone();
        self.entries.push(entry);
        Some(plan)
    }

    /// Stores `plan` for `key` as the most recently used, replacing any plan for the same key
    /// and evicting the least recently used one when full.
    pub fn insert(&mut self, key: K, plan: P) {
        self.entries.retain(|(k, _)| k != &key);
        if self.capacity == 0 {
            return;
        }
        if self.entries.len() == self.capacity {
            self.entries.remove(0);
        }
        self.entries.push((key, plan));
    }

    /// How many plans it holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds no plan.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Tensor;

    fn key(n: usize) -> PlanKey {
        PlanKey::new(
            &[Tensor::from_vec(vec![n], vec![0f32; n]).unwrap()],
            &[false],
        )
    }

    #[test]
    fn keys_from_signatures_match_keys_from_tensors_without_the_tensors() {
        let shape = Tensor::from_vec(vec![2], vec![3i64, 4]).unwrap();
        let x = Tensor::from_vec(vec![1, 2], vec![0f32, 1.0]).unwrap();
        let folding = [true, false];
        let from_tensors = PlanKey::new(&[shape.clone(), x.clone()], &folding);
        // x stands for a tensor on a device: only its dtype and shape are known.
        let signatures = [
            (shape.dtype(), shape.shape(), Some(&shape)),
            (x.dtype(), x.shape(), None),
        ];
        let from_signatures = PlanKey::from_signatures(signatures.into_iter(), &folding);
        assert_eq!(from_signatures, Some(from_tensors));
        // Other folded values are another plan; a folded input with no values has no key.
        let other = Tensor::from_vec(vec![2], vec![3i64, 5]).unwrap();
        let signatures = [
            (other.dtype(), other.shape(), Some(&other)),
            (x.dtype(), x.shape(), None),
        ];
        assert_ne!(
            PlanKey::from_signatures(signatures.into_iter(), &folding),
            Some(PlanKey::new(&[shape.clone(), x.clone()], &folding))
        );
        let signatures = [
            (shape.dtype(), shape.shape(), None),
            (x.dtype(), x.shape(), Some(&x)),
        ];
        assert_eq!(
            PlanKey::from_signatures(signatures.into_iter(), &folding),
            None
        );
    }

    #[test]
    fn evicts_the_least_recently_used() {
        let mut cache = PlanCache::new(2);
        cache.insert(key(1), 1);
        cache.insert(key(2), 2);
        assert_eq!(cache.get(&key(1)), Some(1));
        cache.insert(key(3), 3);
        assert_eq!(cache.get(&key(2)), None);
        assert_eq!(cache.get(&key(1)), Some(1));
        assert_eq!(cache.get(&key(3)), Some(3));
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn reinserting_replaces() {
        let mut cache = PlanCache::new(2);
        cache.insert(key(1), 1);
        cache.insert(key(2), 2);
        cache.insert(key(1), 10);
        assert_eq!(cache.len(), 2);
        cache.insert(key(3), 3);
        // key 2 was the least recently used once key 1 was replaced.
        assert_eq!(cache.get(&key(2)), None);
        assert_eq!(cache.get(&key(1)), Some(10));
    }

    #[test]
    fn capacity_zero_keeps_nothing() {
        let mut cache = PlanCache::new(0);
        cache.insert(key(1), 1);
        assert!(cache.is_empty());
        assert_eq!(cache.get(&key(1)), None);
    }
}
