// Creates users through the public REST route, as an operator would.
export async function createUser(baseUrl: string, adminKey: string, username: string, role = "user"): Promise<string> {
  const response = await fetch(`${baseUrl}/v2/core/auth/users`, {
    method: "POST",
    headers: { authorization: `Bearer ${adminKey}`, "content-type": "application/json" },
    body: JSON.stringify({ username, role }),
  });
  const body = (await response.json()) as { api_key?: string; message?: string };
  if (!response.ok || body.api_key === undefined) throw new Error(`create user ${username}: ${body.message}`);
  return body.api_key;
}
