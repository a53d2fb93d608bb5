#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() {
        let rows = window!(f32, [8, 8]);
        let counts = window!(i32, [4]);
        all_gather_v!(rows, rows, counts);
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
