#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() {
        let data = window!(i64, [8]);
        reduce!(data, root = 7, op = max, nranks = 4);
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
