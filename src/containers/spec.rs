//! Which container, of which element types: the one source of truth for the names.

use super::absl::AbslRawHashSet;
use super::core::{Container, ElementType, KeyOrder};
use super::f14::{F14Policy, F14Today, F14Vector2018 as F14Vector2018Model};
use super::rust_std::{BTreeModel, Hashbrown, RustVec};

/// Every modelled container (what each is: [`ContainerKind::describe`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ContainerKind {
    F14Vector,
    F14Value,
    F14Node,
    F14Vector2018,
    F14Vector2018Split,
    Hashmap,
    Hashset,
    Vec,
    Vecdeque,
    Btreemap,
    AbslFlatHashMap,
    AbslFlatHashSet,
    AbslNodeHashMap,
    AbslNodeHashSet,
}

impl crate::choice::Choice for ContainerKind {
    fn all() -> &'static [Self] {
        &ContainerKind::ALL
    }

    fn name(self) -> &'static str {
        ContainerKind::name(self)
    }

    fn help(self) -> &'static str {
        self.describe()
    }
}

/// Whether a container takes a mapped type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ValueRule {
    Required,
    Forbidden,
    /// folly: with a value it is the map, without it the set.
    Optional,
}

impl ContainerKind {
    pub const ALL: [ContainerKind; 14] = [
        ContainerKind::F14Vector,
        ContainerKind::F14Value,
        ContainerKind::F14Node,
        ContainerKind::F14Vector2018,
        ContainerKind::F14Vector2018Split,
        ContainerKind::Hashmap,
        ContainerKind::Hashset,
        ContainerKind::Vec,
        ContainerKind::Vecdeque,
        ContainerKind::Btreemap,
        ContainerKind::AbslFlatHashMap,
        ContainerKind::AbslFlatHashSet,
        ContainerKind::AbslNodeHashMap,
        ContainerKind::AbslNodeHashSet,
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            ContainerKind::F14Vector => "f14-vector",
            ContainerKind::F14Value => "f14-value",
            ContainerKind::F14Node => "f14-node",
            ContainerKind::F14Vector2018 => "f14-vector-2018",
            ContainerKind::F14Vector2018Split => "f14-vector-2018-split",
            ContainerKind::Hashmap => "hashmap",
            ContainerKind::Hashset => "hashset",
            ContainerKind::Vec => "vec",
            ContainerKind::Vecdeque => "vecdeque",
            ContainerKind::Btreemap => "btreemap",
            ContainerKind::AbslFlatHashMap => "absl-flat-hash-map",
            ContainerKind::AbslFlatHashSet => "absl-flat-hash-set",
            ContainerKind::AbslNodeHashMap => "absl-node-hash-map",
            ContainerKind::AbslNodeHashSet => "absl-node-hash-set",
        }
    }

    /// What the container is, in one line (`container --help`).
    pub fn describe(self) -> &'static str {
        match self {
            ContainerKind::F14Vector => {
                "folly F14VectorMap/Set today (one allocation: chunks then values)"
            }
            ContainerKind::F14Value => "folly F14ValueMap/Set today (values inside the chunks)",
            ContainerKind::F14Node => {
                "folly F14NodeMap/Set today (chunks of pointers, one allocation per value)"
            }
            ContainerKind::F14Vector2018 => {
                "folly F14VectorMap/Set at ff9d6fee (2018, chunks and values in one allocation)"
            }
            ContainerKind::F14Vector2018Split => {
                "folly F14VectorMap/Set at ff9d6fee's parent (2018, chunks and values apart)"
            }
            ContainerKind::Hashmap => "Rust std HashMap<K, V> (hashbrown)",
            ContainerKind::Hashset => "Rust std HashSet<K> (hashbrown)",
            ContainerKind::Vec => "Rust std Vec<K>, filled by push",
            ContainerKind::Vecdeque => "Rust std VecDeque<K>, filled by push_back",
            ContainerKind::Btreemap => "Rust std BTreeMap<K, V>",
            ContainerKind::AbslFlatHashMap => "abseil flat_hash_map<K, V> (20220623)",
            ContainerKind::AbslFlatHashSet => "abseil flat_hash_set<K> (20220623)",
            ContainerKind::AbslNodeHashMap => "abseil node_hash_map<K, V> (20220623)",
            ContainerKind::AbslNodeHashSet => "abseil node_hash_set<K> (20220623)",
        }
    }

    /// Every name, comma-separated (for error messages).
    pub(crate) fn known_names() -> String {
        crate::choice::names::<Self>()
    }

    pub fn from_name(name: &str) -> Result<Self, SpecError> {
        crate::choice::find(name).ok_or_else(|| SpecError::UnknownName(name.to_string()))
    }

    pub(crate) fn value_rule(self) -> ValueRule {
        use ContainerKind::*;
        match self {
            F14Vector | F14Value | F14Node | F14Vector2018 | F14Vector2018Split => {
                ValueRule::Optional
            }
            Hashmap | Btreemap | AbslFlatHashMap | AbslNodeHashMap => ValueRule::Required,
            Hashset | Vec | Vecdeque | AbslFlatHashSet | AbslNodeHashSet => ValueRule::Forbidden,
        }
    }

    /// Most elements the model is grown to: the B-tree model keeps every node (about 30
    /// bytes per key), the others a few bytes per element at most.
    pub fn max_count(self) -> u64 {
        match self {
            ContainerKind::Btreemap => 10_000_000,
            _ => super::growth::MAX_COUNT,
        }
    }

    /// Whether its table is two arrays in one allocation (or two, for the 2018 split F14).
    pub(crate) fn has_two_arrays(self) -> bool {
        use ContainerKind::*;
        matches!(
            self,
            F14Vector
                | F14Vector2018
                | F14Vector2018Split
                | Hashmap
                | Hashset
                | AbslFlatHashMap
                | AbslFlatHashSet
                | AbslNodeHashMap
                | AbslNodeHashSet
        )
    }

    /// Whether the container is a hash table (for the bytes-per-element chart).
    pub(crate) fn is_hash_table(self) -> bool {
        !matches!(
            self,
            ContainerKind::Vec | ContainerKind::Vecdeque | ContainerKind::Btreemap
        )
    }
}

/// A bad container specification.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SpecError {
    #[error("unknown container '{0}' (known: {names})", names = ContainerKind::known_names())]
    UnknownName(String),
    #[error("{0} is a map: give --value SIZE[:ALIGN]")]
    ValueRequired(&'static str),
    #[error("{0} holds one type: give only --key")]
    ValueForbidden(&'static str),
}

/// One container of given element types, keys inserted in a given order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContainerSpec {
    pub kind: ContainerKind,
    pub key: ElementType,
    pub value: Option<ElementType>,
    /// Only the B-tree's shape depends on it.
    pub order: KeyOrder,
}

impl ContainerSpec {
    pub fn new(
        kind: ContainerKind,
        key: ElementType,
        value: Option<ElementType>,
        order: KeyOrder,
    ) -> Result<Self, SpecError> {
        match (kind.value_rule(), value) {
            (ValueRule::Required, None) => return Err(SpecError::ValueRequired(kind.name())),
            (ValueRule::Forbidden, Some(_)) => return Err(SpecError::ValueForbidden(kind.name())),
            _ => {}
        }
        Ok(ContainerSpec {
            kind,
            key,
            value,
            order,
        })
    }

    /// The C++ `value_type`: `std::pair<const K, V>` or `K`.
    fn cpp_value(&self) -> ElementType {
        match self.value {
            Some(v) => ElementType::cpp_pair(self.key, v),
            None => self.key,
        }
    }

    /// What the container stores per element, as its language lays it out.
    pub fn element(&self) -> ElementType {
        match self.kind {
            ContainerKind::Hashmap | ContainerKind::Btreemap => {
                ElementType::rust_tuple(self.key, self.value.unwrap_or(self.key))
            }
            ContainerKind::Hashset | ContainerKind::Vec | ContainerKind::Vecdeque => self.key,
            _ => self.cpp_value(),
        }
    }

    /// A fresh, empty model that will receive `count` elements.
    pub fn build(&self, count: u64) -> Box<dyn Container> {
        use ContainerKind::*;
        match self.kind {
            F14Vector => Box::new(F14Today::new(F14Policy::Vector, self.cpp_value())),
            F14Value => Box::new(F14Today::new(F14Policy::Value, self.cpp_value())),
            F14Node => Box::new(F14Today::new(F14Policy::Node, self.cpp_value())),
            F14Vector2018 => Box::new(F14Vector2018Model::new(self.cpp_value(), false)),
            F14Vector2018Split => Box::new(F14Vector2018Model::new(self.cpp_value(), true)),
            Hashmap | Hashset => Box::new(Hashbrown::new(self.element())),
            Vec | Vecdeque => Box::new(RustVec::new(self.key)),
            Btreemap => Box::new(BTreeModel::new(
                self.key,
                self.value.unwrap_or(self.key),
                count,
                self.order,
            )),
            AbslFlatHashMap | AbslFlatHashSet => Box::new(AbslRawHashSet::flat(self.cpp_value())),
            AbslNodeHashMap | AbslNodeHashSet => Box::new(AbslRawHashSet::node(self.cpp_value())),
        }
    }
}
