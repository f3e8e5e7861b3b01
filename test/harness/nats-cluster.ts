// A NATS JetStream cluster of three servers on loopback, each a child process with its own store directory, for the
// clustered-mode tests: started, killed and restarted by the test, and stopped with it. `make test` installs Debian's
// nats-server when it is missing.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

const READY_TIMEOUT_MS = 30_000;
/** NATS's max_payload for the tests' servers: 8 MiB (the default is 1 MiB). */
export const MAX_PAYLOAD = 8 * 1024 * 1024;

export function natsServerPath(): string {
  const found = spawnSync("sh", ["-c", "command -v nats-server || ls /usr/sbin/nats-server /usr/bin/nats-server 2>/dev/null"], { encoding: "utf8" });
  const binary = found.stdout.split("\n").find((line) => line.trim() !== "")?.trim();
  if (binary === undefined) throw new Error("nats-server is not installed: `make test` installs it (apt-get install nats-server)");
  return binary;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

interface NodePorts {
  readonly client: number;
  readonly cluster: number;
  readonly monitor: number;
}

export class NatsCluster {
  readonly #binary: string;
  readonly #root: string;
  readonly #ports: readonly NodePorts[];
  readonly #processes: (ChildProcess | undefined)[];

  private constructor(binary: string, root: string, ports: readonly NodePorts[]) {
    this.#binary = binary;
    this.#root = root;
    this.#ports = ports;
    this.#processes = ports.map(() => undefined);
  }

  /** Starts `size` servers and waits until JetStream has a meta leader that every server knows. */
  static async start(size = 3): Promise<NatsCluster> {
    const ports: NodePorts[] = [];
    for (let i = 0; i < size; i++) ports.push({ client: await freePort(), cluster: await freePort(), monitor: await freePort() });
    const cluster = new NatsCluster(natsServerPath(), fs.mkdtempSync(path.join(os.tmpdir(), "engram-nats-")), ports);
    for (let i = 0; i < size; i++) cluster.#spawn(i);
    await cluster.waitForLeader();
    return cluster;
  }

  /** Client URLs of every server, running or not. */
  get urls(): string[] {
    return this.#ports.map((p) => `nats://127.0.0.1:${p.client}`);
  }

  #spawn(i: number): void {
    const ports = this.#ports[i] as NodePorts;
    const routes = this.#ports.filter((_, j) => j !== i).map((p) => `nats://127.0.0.1:${p.cluster}`);
    const dir = path.join(this.#root, `n${i}`);
    fs.mkdirSync(dir, { recursive: true });
    // The suite's largest writes (1,000 items, a 1 MiB archive block) make commands over NATS's default 1 MiB.
    const config = path.join(dir, "nats.conf");
    fs.writeFileSync(config, `max_payload: ${MAX_PAYLOAD}\n`);
    const args = ["-c", config, "-a", "127.0.0.1", "-p", String(ports.client), "-m", String(ports.monitor), "-js", "-sd", dir, "--server_name", `n${i}`, "--cluster_name", "engram", "--cluster", `nats://127.0.0.1:${ports.cluster}`, "--routes", routes.join(",")];
    const child = spawn(this.#binary, args, { stdio: "ignore" });
    this.#processes[i] = child;
  }

  /** Kills server `i` at once (SIGKILL): no clean shutdown, as a machine lost. */
  kill(i: number): Promise<void> {
    const child = this.#processes[i];
    this.#processes[i] = undefined;
    if (child === undefined || child.exitCode !== null) return Promise.resolve();
    return new Promise((resolve) => {
      child.once("exit", () => resolve());
      child.kill("SIGKILL");
    });
  }

  /** Starts server `i` again on its store and waits until the cluster has a leader again. */
  async restart(i: number): Promise<void> {
    await this.kill(i);
    this.#spawn(i);
    await this.waitForLeader();
  }

  /** Waits until every running server reports the same JetStream meta leader. */
  async waitForLeader(): Promise<void> {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      const leaders = await Promise.all(
        this.#ports.map(async (p, i) => {
          if (this.#processes[i] === undefined) return "down";
          try {
            const body = (await (await fetch(`http://127.0.0.1:${p.monitor}/jsz`)).json()) as { meta_cluster?: { leader?: string } };
            return body.meta_cluster?.leader ?? "";
          } catch {
            return "";
          }
        }),
      );
      const running = leaders.filter((l) => l !== "down");
      if (running.length > 0 && running.every((l) => l !== "" && l === running[0])) return;
      if (Date.now() > deadline) throw new Error(`NATS cluster has no common JetStream leader: ${leaders.join(", ")}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.#ports.map((_, i) => this.kill(i)));
    fs.rmSync(this.#root, { recursive: true, force: true });
  }
}
