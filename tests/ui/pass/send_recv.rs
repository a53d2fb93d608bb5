//! Every accepted form of send!/recv!: both ends given, the own end left to an SPMD host,
//! expressions for ranks of any integer type, literal and passed groups, nranks.
#[pld::program]
mod demo {
    #[pld::host]
    pub fn run(pairs: &pld::Groups) -> Vec<u8> {
        let out = window!(u8, [4]);
        let inbox = window!(u8, [4]);
        let n = world_size();
        for r in ranks() {
            stage_in!(out, r, [r as u8; 4]);
        }
        for r in ranks() {
            send!(out, to = (r + 1) % n, from = r);
            recv!(inbox, from = (r + n - 1) % n, to = r as u32);
        }
        send!(out, to = 1u8, from = 0i64, group = [2, 3]);
        recv!(inbox, from = 0, to = 1, group = [2, 3], nranks = 2);
        send!(out, to = 1, from = 0, group = pairs);
        recv!(inbox, from = 0, to = 1, group = pairs);
        let mut got = vec![0; 4];
        stage_out!(inbox, 3, got);
        got
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let pairs = world.host().unwrap().split(|r| Some(((r / 2) as u32, r as i64))).unwrap();
    // Rank 3 receives from rank 2 each time: in the ring, in [2, 3] and in the pair {2, 3}.
    assert_eq!(demo::load(&world).unwrap().run(&pairs).unwrap(), vec![2; 4]);
}
