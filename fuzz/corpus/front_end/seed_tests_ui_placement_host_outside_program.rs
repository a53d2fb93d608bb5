#[pld::host]
pub fn run() {
    all_reduce!(data);
}

fn main() {
    run();
}
