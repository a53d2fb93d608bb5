//! Trailing commas are formatting: the printer (prettyplease) adds them to lists it wraps and
//! drops them from lists it keeps on one line. Dropping them wherever they carry no meaning when
//! a program is parsed makes the canonical form independent of layout, so a program that is
//! printed and parsed again is equal to itself.

use syn::punctuated::Punctuated;
use syn::visit_mut::{self, VisitMut};

pub(crate) struct DropTrailingCommas;

fn drop_trailing<T, P>(list: &mut Punctuated<T, P>) {
    if list.trailing_punct() {
        list.pop_punct();
    }
}

impl VisitMut for DropTrailingCommas {
    fn visit_signature_mut(&mut self, sig: &mut syn::Signature) {
        drop_trailing(&mut sig.inputs);
        visit_mut::visit_signature_mut(self, sig);
    }

    fn visit_expr_call_mut(&mut self, call: &mut syn::ExprCall) {
        drop_trailing(&mut call.args);
        visit_mut::visit_expr_call_mut(self, call);
    }

    fn visit_expr_method_call_mut(&mut self, call: &mut syn::ExprMethodCall) {
        drop_trailing(&mut call.args);
        visit_mut::visit_expr_method_call_mut(self, call);
    }

    fn visit_expr_array_mut(&mut self, array: &mut syn::ExprArray) {
        drop_trailing(&mut array.elems);
        visit_mut::visit_expr_array_mut(self, array);
    }

    fn visit_expr_tuple_mut(&mut self, tuple: &mut syn::ExprTuple) {
        if tuple.elems.len() > 1 {
            drop_trailing(&mut tuple.elems); // `(x,)` keeps its comma: it makes the tuple
        }
        visit_mut::visit_expr_tuple_mut(self, tuple);
    }

    fn visit_expr_struct_mut(&mut self, expr: &mut syn::ExprStruct) {
        if expr.rest.is_none() {
            drop_trailing(&mut expr.fields);
        }
        visit_mut::visit_expr_struct_mut(self, expr);
    }

    fn visit_type_tuple_mut(&mut self, tuple: &mut syn::TypeTuple) {
        if tuple.elems.len() > 1 {
            drop_trailing(&mut tuple.elems);
        }
        visit_mut::visit_type_tuple_mut(self, tuple);
    }

    fn visit_pat_tuple_mut(&mut self, tuple: &mut syn::PatTuple) {
        if tuple.elems.len() > 1 {
            drop_trailing(&mut tuple.elems);
        }
        visit_mut::visit_pat_tuple_mut(self, tuple);
    }

    fn visit_expr_closure_mut(&mut self, closure: &mut syn::ExprClosure) {
        drop_trailing(&mut closure.inputs);
        visit_mut::visit_expr_closure_mut(self, closure);
    }
}
