//! Discretizations and self-compositions kept between queries (see [`crate::Ledger`]).
//!
//! Every entry is keyed by everything that determines it (the event's component, the bound,
//! the direction, the grid step, the truncation mass, the tilts and, for a self-composition,
//! the count), so a hit returns exactly what a fresh computation would: an accountant with a
//! cache answers bit for bit as one without.

use super::plan::Component;
use super::Direction;
use crate::bound::Bound;
use crate::pld::PrivacyLossDistribution;
use crate::pmf::grid_pmf::GridPmf;
use std::sync::{Arc, Mutex};

/// Most single-event discretizations kept (the oldest is dropped first).
const MAX_SINGLES: usize = 64;
/// Most self-compositions kept (one per group, bound, direction and grid).
const MAX_POWERS: usize = 64;

/// What a single-event discretization is of.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Source {
    /// The merged unsampled Gaussians, by μ (its bits).
    Gaussian(u64),
    /// One group's event.
    Group(Component),
}

/// The grid of an entry: step and truncation mass (their bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct GridKey {
    pub(super) bound: Bound,
    pub(super) step: u64,
    pub(super) tail_mass: u64,
    pub(super) merge_budget: u64,
    /// Whether a random-allocation epoch's split blocks were composed tilted (see
    /// [`Component::tilts_when_reaching`]).
    pub(super) tilted_split: bool,
}

impl GridKey {
    pub(super) fn new(bound: Bound, step: f64, tail_mass: f64, merge_budget: f64) -> Self {
        GridKey {
            bound,
            step: step.to_bits(),
            tail_mass: tail_mass.to_bits(),
            merge_budget: merge_budget.to_bits(),
            tilted_split: false,
        }
    }

    /// The same key for an entry whose split blocks were (or not) composed tilted.
    pub(super) fn with_tilted_split(self, tilted_split: bool) -> Self {
        GridKey {
            tilted_split,
            ..self
        }
    }
}

struct Single {
    source: Source,
    grid: GridKey,
    pld: Arc<PrivacyLossDistribution>,
}

struct Power {
    component: Component,
    grid: GridKey,
    direction: Direction,
    tilts: usize,
    /// Whether the tilted powers reached beyond the window's saddle point (see
    /// [`crate::pmf::GridPmf::self_compose_tilted_reaching`]).
    reaching: bool,
    count: u64,
    pmf: Arc<GridPmf>,
}

/// Discretized single events and their latest self-compositions, shared by the threads of
/// one evaluation.
pub(super) struct PldCache {
    singles: Mutex<Vec<Single>>,
    powers: Mutex<Vec<Power>>,
    /// Most single-event discretizations kept.
    max_singles: usize,
}

impl Default for PldCache {
    fn default() -> Self {
        PldCache::keeping(MAX_SINGLES)
    }
}

impl std::fmt::Debug for PldCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let singles = self.singles.lock().map(|s| s.len()).unwrap_or(0);
        let powers = self.powers.lock().map(|p| p.len()).unwrap_or(0);
        f.debug_struct("PldCache")
            .field("singles", &singles)
            .field("powers", &powers)
            .finish()
    }
}

impl PldCache {
    /// An empty cache keeping at most `max_singles` single-event discretizations (and
    /// [`MAX_POWERS`] self-compositions).
    pub(super) fn keeping(max_singles: usize) -> Self {
        PldCache {
            singles: Mutex::new(Vec::new()),
            powers: Mutex::new(Vec::new()),
            max_singles,
        }
    }

    /// The single-event PLD of `source` on `grid`, computed by `make` on a miss.
    pub(super) fn single<E>(
        &self,
        source: Source,
        grid: GridKey,
        make: impl FnOnce() -> Result<PrivacyLossDistribution, E>,
    ) -> Result<Arc<PrivacyLossDistribution>, E> {
        if let Ok(singles) = self.singles.lock() {
            if let Some(hit) = singles
                .iter()
                .find(|s| s.grid == grid && s.source == source)
            {
                return Ok(Arc::clone(&hit.pld));
            }
        }
        // Computed outside the lock: the other thread may discretize meanwhile.
        let pld = Arc::new(make()?);
        if let Ok(mut singles) = self.singles.lock() {
            if !singles.iter().any(|s| s.grid == grid && s.source == source) {
                if singles.len() >= self.max_singles.max(1) {
                    singles.remove(0);
                }
                singles.push(Single {
                    source,
                    grid,
                    pld: Arc::clone(&pld),
                });
            }
        }
        Ok(pld)
    }

    /// How many self-compositions kept were made with reaching (double-double) powers.
    #[cfg(test)]
    pub(super) fn reaching_powers(&self) -> usize {
        self.powers
            .lock()
            .map(|powers| powers.iter().filter(|p| p.reaching).count())
            .unwrap_or(0)
    }

    /// The `count`-fold self-composition of a group's PMF, computed by `make` on a miss;
    /// only the latest count is kept per group, bound, direction and grid.
    pub(super) fn power<E>(
        &self,
        component: &Component,
        grid: GridKey,
        direction: Direction,
        (tilts, reaching): (usize, bool),
        count: u64,
        make: impl FnOnce() -> Result<GridPmf, E>,
    ) -> Result<Arc<GridPmf>, E> {
        let same = |p: &Power| {
            p.grid == grid
                && p.direction == direction
                && p.tilts == tilts
                && p.reaching == reaching
                && p.component == *component
        };
        if let Ok(powers) = self.powers.lock() {
            if let Some(hit) = powers.iter().find(|p| same(p) && p.count == count) {
                return Ok(Arc::clone(&hit.pmf));
            }
        }
        let pmf = Arc::new(make()?);
        if let Ok(mut powers) = self.powers.lock() {
            powers.retain(|p| !same(p));
            if powers.len() >= MAX_POWERS {
                powers.remove(0);
            }
            powers.push(Power {
                component: component.clone(),
                grid,
                direction,
                tilts,
                reaching,
                count,
                pmf: Arc::clone(&pmf),
            });
        }
        Ok(pmf)
    }
}
