//! A small least-recently-used cache of plans keyed by input signature.

use tessera_core::model::specialize::PlanKey;

#[derive(Debug)]
pub(crate) struct PlanCache<P> {
    capacity: usize,
    /// Most recently used last.
    entries: Vec<(PlanKey, P)>,
}

impl<P: Clone> PlanCache<P> {
    pub(crate) fn new(capacity: usize) -> Self {
        PlanCache {
            capacity,
            entries: Vec::new(),
        }
    }

    pub(crate) fn get(&mut self, key: &PlanKey) -> Option<P> {
        let index = self.entries.iter().position(|(k, _)| k == key)?;
        let entry = self.entries.remove(index);
        let plan = entry.1.clone();
        self.entries.push(entry);
        Some(plan)
    }

    pub(crate) fn insert(&mut self, key: PlanKey, plan: P) {
        self.entries.retain(|(k, _)| k != &key);
        if self.entries.len() == self.capacity {
            self.entries.remove(0);
        }
        self.entries.push((key, plan));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_core::Tensor;

    fn key(n: usize) -> PlanKey {
        PlanKey::new(
            &[Tensor::from_vec(vec![n], vec![0f32; n]).unwrap()],
            &[false],
        )
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
    }
}
