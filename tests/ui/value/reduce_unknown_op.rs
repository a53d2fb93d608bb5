#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() {
        let data = window!(i32, [8]);
        reduce!(data, root = 0, op = mean);
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
