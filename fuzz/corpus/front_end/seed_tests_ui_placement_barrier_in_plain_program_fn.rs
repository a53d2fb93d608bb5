#[pld::program]
mod demo {
    pub fn not_host() {
        pld::barrier!();
    }
}

fn main() {
    demo::not_host();
}
