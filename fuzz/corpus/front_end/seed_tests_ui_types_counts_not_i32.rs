#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() {
        let data = window!(f32, [4, 8]);
        let target = window!(f32, [4, 8]);
        let send = window!(f32, [4]);
        let recv = window!(i32, [4]);
        all_to_all_v!(data, target, send, recv);
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
