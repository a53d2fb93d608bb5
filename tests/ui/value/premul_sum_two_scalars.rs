#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() {
        let data = window!(f32, [8]);
        reduce!(data, root = 0, op = premul_sum(1.0, 2.0));
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
