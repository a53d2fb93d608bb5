#[pld::program]
fn not_a_module() {}

fn main() {
    not_a_module();
}
