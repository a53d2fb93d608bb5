#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() {
        let local = window!(f32, [8]);
        let rows = window!(f32, [4, 8]);
        gather!(local, rows, root = 4, nranks = 4);
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
