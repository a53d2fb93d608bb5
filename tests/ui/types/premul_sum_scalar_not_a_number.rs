#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() {
        let data = window!(f32, [8]);
        all_reduce!(data, op = premul_sum("half"));
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
