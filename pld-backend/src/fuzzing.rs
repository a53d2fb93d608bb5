//! The front end under arbitrary input, for the fuzz target (`fuzz/`) and the tests that replay
//! its corpus: every entry point a user's source reaches, the macros' and the build script's.
//! Input may be rejected anywhere; a panic is a bug.

use std::str::FromStr;

use pld_model::Collective;
use proc_macro2::{Span, TokenStream};

use crate::build::program_c;

/// Runs `text` through the whole front end: the `#[pld::program]` macro (parse, check, expand),
/// every collective macro's argument parser, and the build script's path (find the programs
/// of a file, lower their kernels to C). Every program the front end accepts must print as
/// source that parses back to an equal program; that is asserted.
pub fn front_end(text: &str) {
    if let Ok(tokens) = TokenStream::from_str(text) {
        let _ = pld_syntax::program_macro(TokenStream::new(), tokens.clone()).to_string();
        for collective in Collective::ALL {
            let _ = pld_syntax::parse_call(collective, tokens.clone(), Span::call_site());
        }
    }
    let Ok(programs) = pld_syntax::programs_in_file(text) else { return };
    for program in programs {
        let _ = program_c(&program);
        let printed = pld_syntax::print_program(&program);
        let reparsed = pld_syntax::programs_in_file(&printed)
            .unwrap_or_else(|e| panic!("a printed program does not parse: {e}\n{printed}"));
        assert_eq!(reparsed.len(), 1, "printing one program gave {}:\n{printed}", reparsed.len());
        if reparsed[0] != program {
            panic!(
                "a printed program parses to another program:\n{printed}\n{}",
                first_difference(&program, &reparsed[0])
            );
        }
    }
}

/// The first item (and, in a host function, the first statement) that differs, both ways.
fn first_difference(a: &pld_syntax::Program, b: &pld_syntax::Program) -> String {
    use pld_syntax::ProgramItem;
    let Some(i) = (0..a.items.len().max(b.items.len())).find(|&i| a.items.get(i) != b.items.get(i)) else {
        return format!("the module differs: {:?}\nvs {:?}", a.attrs, b.attrs);
    };
    match (a.items.get(i), b.items.get(i)) {
        (Some(ProgramItem::Host(x)), Some(ProgramItem::Host(y))) => {
            if x.hoisted != y.hoisted {
                return format!("item {i}, hoisted signals:\n{:?}\nvs\n{:?}", x.hoisted, y.hoisted);
            }
            let (xs, ys) = (&x.body.stmts, &y.body.stmts);
            match (0..xs.len().max(ys.len())).find(|&j| xs.get(j) != ys.get(j)) {
                Some(j) => format!("item {i}, statement {j}:\n{:#?}\nvs\n{:#?}", xs.get(j), ys.get(j)),
                None => format!("item {i}, signature:\n{:#?}\nvs\n{:#?}", x.sig, y.sig),
            }
        }
        (x, y) => format!("item {i}:\n{x:#?}\nvs\n{y:#?}"),
    }
}
