// The page an account email's link opens (/__/auth/action?mode=…&oobCode=…&apiKey=…): resets a
// password, verifies an email address or confirms an email change, through the Identity Toolkit API
// of the same server, as Firebase's hosted action handler does.
const params = new URLSearchParams(location.search);
const mode = params.get("mode");
const code = params.get("oobCode");
const key = params.get("apiKey") ?? "hearth";
const $ = (id) => document.getElementById(id);

const MESSAGES = {
  EXPIRED_OOB_CODE: "This link has expired. Ask for a new email and use the newest link.",
  INVALID_OOB_CODE: "This link is not valid any more: it was already used, or a newer one was sent. Ask for a new email.",
  USER_DISABLED: "This account is disabled.",
  USER_NOT_FOUND: "This account no longer exists.",
  EMAIL_EXISTS: "Another account already uses that address.",
};

async function call(operation, body) {
  const response = await fetch(`/identitytoolkit.googleapis.com/v1/accounts:${operation}?key=${encodeURIComponent(key)}`, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  });
  const json = await response.json().catch(() => ({}));
  if (!response.ok) {
    const code = json.error?.message ?? `HTTP_${response.status}`;
    const base = code.split(" ")[0];
    throw new Error(MESSAGES[base] ?? (base === "WEAK_PASSWORD" ? "Choose a longer password (at least 6 characters)." : code));
  }
  return json;
}

function show(title, message, ok) {
  $("title").textContent = title;
  $("message").textContent = message;
  $("message").className = ok ? "done" : "hint";
  const next = params.get("continueUrl");
  if (ok && next && /^https?:\/\//.test(next)) { $("continue").hidden = false; $("continue-link").href = next; }
}

async function main() {
  if (!code || !mode) return show("This link is incomplete", "Open the whole link from the email.", false);
  try {
    if (mode === "resetPassword") {
      const info = await call("resetPassword", { oobCode: code });
      show("Choose a new password", `For ${info.email}.`, false);
      const form = $("reset");
      form.hidden = false;
      form.elements.password.focus();
      form.addEventListener("submit", async (event) => {
        event.preventDefault();
        const { password, again } = Object.fromEntries(new FormData(form));
        if (password !== again) { $("error").textContent = "The two passwords are not the same."; return; }
        try {
          await call("resetPassword", { oobCode: code, newPassword: password });
          form.hidden = true;
          show("Password changed", "You can now sign in with your new password.", true);
        } catch (error) { $("error").textContent = error.message; }
      });
    } else if (mode === "verifyEmail" || mode === "verifyAndChangeEmail") {
      const result = await call("update", { oobCode: code });
      show(mode === "verifyEmail" ? "Email verified" : "Email changed",
        mode === "verifyEmail" ? `${result.email ?? "Your address"} is verified.` : `Your account now uses ${result.email ?? "the new address"}.`, true);
    } else if (mode === "signIn") {
      // Email-link sign-in finishes in the app that asked for it (its continueUrl gets the same
      // parameters, as Firebase's hosted handler passes them on); the code is not used here.
      const next = params.get("continueUrl");
      if (next && /^https?:\/\//.test(next)) {
        const target = new URL(next);
        for (const [name, value] of params) if (name !== "continueUrl") target.searchParams.set(name, value);
        location.replace(target.toString());
        return;
      }
      show("Sign in from your app", "Open this link on the device and in the app where you asked to sign in.", false);
    } else {
      show("Unknown action", "This link does not ask for anything this server knows.", false);
    }
  } catch (error) {
    show("This link did not work", error.message, false);
  }
}

main();
