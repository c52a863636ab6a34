// A thin client: it starts `ocr-hook lsp` and lets the language server do everything (diagnostics from the
// last review, the fix / dismiss / show code actions, the review-now command). The one thing it adds is what
// the protocol cannot: asking for a dismissal's reason as free text before the server records it.
import * as vscode from "vscode";
import {
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
} from "vscode-languageclient/node";

let client: LanguageClient | undefined;

function serverOptions(): ServerOptions {
  const settings = vscode.workspace.getConfiguration("ocr-hook");
  const [command, ...args] = settings.get<string[]>("command", ["ocr-hook", "lsp"]);
  const report = settings.get<string>("fromReport", "");
  if (report) {
    args.push("--from", report);
  }
  const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  return { command, args, options: { cwd } };
}

const clientOptions: LanguageClientOptions = {
  documentSelector: [{ scheme: "file" }],
  middleware: {
    executeCommand: async (command, args, next) => {
      if (command === "ocr-hook.dismiss" && args.length === 1) {
        const reason = await vscode.window.showInputBox({
          prompt: `Why is finding ${String(args[0]).slice(0, 8)} wrong? (recorded in the dismissals file; it teaches later reviews)`,
          ignoreFocusOut: true,
        });
        if (!reason || !reason.trim()) {
          return undefined;
        }
        return next(command, [args[0], reason.trim()]);
      }
      return next(command, args);
    },
  },
};

async function reviewNow(file: boolean): Promise<void> {
  if (!client) {
    return;
  }
  const uri = file ? vscode.window.activeTextEditor?.document.uri.toString() : undefined;
  await client.sendRequest(ExecuteCommandRequest.type, {
    command: "ocr-hook.review",
    arguments: uri ? [uri] : [],
  });
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  client = new LanguageClient("ocr-hook", "ocr-hook", serverOptions(), clientOptions);
  context.subscriptions.push(
    vscode.commands.registerCommand("ocr-hook.reviewNow", () => reviewNow(false)),
    vscode.commands.registerCommand("ocr-hook.reviewFileNow", () => reviewNow(true)),
    vscode.commands.registerCommand("ocr-hook.restart", async () => {
      await client?.restart();
    }),
  );
  await client.start();
}

export async function deactivate(): Promise<void> {
  await client?.stop();
}
