//! clap's side of [`crate::choice`]: one value parser for every named choice, built from the
//! library's list (names, aliases, help), with clap's usual "invalid value ... [possible
//! values: ...]" error.

use crate::choice::{find, Choice};
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use std::ffi::OsStr;
use std::marker::PhantomData;

/// The parser of a [`Choice`] (`#[arg(value_parser = choice::<Format>())]`).
pub(crate) struct ChoiceParser<T>(PhantomData<fn() -> T>);

impl<T> Clone for ChoiceParser<T> {
    fn clone(&self) -> Self {
        ChoiceParser(PhantomData)
    }
}

/// The value parser of `T`.
pub fn choice<T: Choice>() -> ChoiceParser<T> {
    ChoiceParser(PhantomData)
}

fn possible<T: Choice>() -> impl Iterator<Item = PossibleValue> {
    T::all().iter().map(|v| {
        let value = PossibleValue::new(v.name()).aliases(v.aliases().iter().copied());
        match v.help() {
            "" => value,
            help => value.help(help),
        }
    })
}

impl<T: Choice> TypedValueParser for ChoiceParser<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<T, clap::Error> {
        if let Some(found) = value.to_str().and_then(find::<T>) {
            return Ok(found);
        }
        // Not a name: clap's own parser of the same list words the error.
        let name = PossibleValuesParser::new(possible::<T>()).parse_ref(cmd, arg, value)?;
        find::<T>(&name).ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidValue))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(possible::<T>()))
    }
}
