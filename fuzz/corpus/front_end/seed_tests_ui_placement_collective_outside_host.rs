use pld::all_reduce;

fn helper() {
    all_reduce!(data, op = sum);
}

fn main() {
    helper();
}
