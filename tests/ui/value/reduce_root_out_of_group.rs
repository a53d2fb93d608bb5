#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() {
        let data = window!(i32, [8]);
        reduce!(data, root = 3, group = [0, 2, 3]);
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
