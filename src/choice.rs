//! Values a user picks by name (`--format md`, `--preset 5.3.1`, `--strategies arena`): each
//! enum lists its values, names, aliases and one line of help here, once, and the command line
//! (`cli::choice`) builds its parser from that list, so no library module depends on the parser.

/// An enum whose values are chosen by name.
pub trait Choice: Copy + Send + Sync + 'static {
    /// Every value, in the order help lists them.
    fn all() -> &'static [Self];
    /// The name a user writes (also the `Display` form).
    fn name(self) -> &'static str;
    /// Other names accepted for the value.
    fn aliases(self) -> &'static [&'static str] {
        &[]
    }
    /// One line on what the value means (the `--help` text).
    fn help(self) -> &'static str {
        ""
    }
}

/// The value called `name` (or one of its aliases), if any.
pub fn find<T: Choice>(name: &str) -> Option<T> {
    T::all()
        .iter()
        .copied()
        .find(|v| v.name() == name || v.aliases().contains(&name))
}

/// Every name, comma-separated (for error messages).
pub fn names<T: Choice>() -> String {
    T::all()
        .iter()
        .map(|v| v.name())
        .collect::<Vec<_>>()
        .join(", ")
}
